"""The GEMM under every float matrix product: MKL's CBLAS when installed, else NumPy's matmul.

``gemm(x, y, out)`` is the one call the CPU kernels (``linalg.py``) and the compiler's NumPy
and C backends make for a product, so eager and compiled code round alike. It starts as a
stub that picks the provider on first use (NOTE [GEMM provider]) and rebinds itself: to
``np.matmul`` when MKL is absent or ``EMBER_BLAS=numpy`` is set (the hot path is then the
attribute lookup of ``blas.gemm`` and NumPy's call, as before), else to a ``Gemm`` over
libmkl_rt's ILP64 ``cblas_?gemm_64``. ``Gemm`` takes any library and symbol names, which
is how the tests drive the stride logic through NumPy's own OpenBLAS where MKL is absent.
This module knows NumPy arrays only: no tensors, no dispatch.

NOTE [GEMM provider]
NumPy's BLAS is OpenBLAS, whose single-thread SGEMM trails MKL's by 12-20% on an AVX-512
Xeon at the sizes of a training step; torch's CPU build uses MKL. ``pip install mkl`` puts
libmkl_rt in ``sys.prefix/lib``; we find it through the distribution's file list. A product
goes to MKL when both operands and ``out`` are NumPy arrays of one dtype (float32/64,
complex64/128), 2-D, each with a unit stride in one dimension and a leading dimension that
fits (row-major NoTrans or Trans; an F-ordered ``out`` computes ``out.T = y.T @ x.T``),
``out`` overlaps neither operand, and ``m*n*k`` reaches ``min_macs`` (below it the ctypes
call costs more than MKL saves); a 3-D batch of such products whose matrices reach
``batch_macs`` runs one GEMM per matrix. Everything else (zero sizes, broadcast or negative
strides, vectors, other dtypes, CuPy arrays) is ``np.matmul``, so results never depend on
whether a case was taken: only on the shapes and strides, identically in eager and compiled
code.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

__all__ = ["gemm", "Gemm", "operand_layout", "provider", "set_provider", "mkl_library"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_C_INT, _C_I64, _C_PTR = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p

# Measured on an AVX-512 Xeon, one thread: a call through ctypes costs about 4 us more than
# np.matmul's and MKL is 15-25% faster, so it pays from about 2^20 multiply-adds (128^3: on
# par in float32, 25% faster in float64; 64^3: twice slower). A batch pays the views too.
MIN_MACS = 1 << 20
BATCH_MACS = 1 << 21


def operand_layout(rows: int, cols: int, s0: int, s1: int, itemsize: int):
    """``(trans, ld)`` that reads a ``rows x cols`` matrix with byte strides ``(s0, s1)`` as a
    row-major CBLAS operand, or None when no unit-stride dimension fits (broadcast, negative
    or gapped strides: NumPy must copy).

    Example:
        >>> operand_layout(3, 4, 16, 4, 4), operand_layout(3, 4, 4, 12, 4)
        ((111, 4), (112, 3))
        >>> operand_layout(3, 4, 16, 0, 4) is None
        True
    """
    if s1 == itemsize or cols == 1:          # rows are contiguous: A itself
        if rows == 1:
            return _NO_TRANS, max(cols, 1)
        if s0 >= cols * itemsize and s0 % itemsize == 0:
            return _NO_TRANS, s0 // itemsize
    if s0 == itemsize or rows == 1:          # columns are contiguous: A^T is row-major
        if cols == 1:
            return _TRANS, max(rows, 1)
        if s1 >= rows * itemsize and s1 % itemsize == 0:
            return _TRANS, s1 // itemsize
    return None


# NOTE [Data pointers without ndarray.ctypes]
# ``a.ctypes.data`` builds a Python object per call (2-3 us, as much as a small GEMM's
# saving); the data pointer is the first field after the object header of NumPy's
# PyArrayObject, which we read directly. The offset is verified on an array at load, and
# the slow attribute is used if it ever disagrees.
_HEADER = object.__basicsize__


def _fast_pointer(a: np.ndarray) -> int:
    return ctypes.c_void_p.from_address(id(a) + _HEADER).value or 0


def _slow_pointer(a: np.ndarray) -> int:
    return a.ctypes.data


def _pointer_reader():
    probe = np.arange(3.0)[1:]
    return _fast_pointer if _fast_pointer(probe) == probe.ctypes.data else _slow_pointer


def _overlaps(a: np.ndarray, p: int, lo: int, hi: int) -> bool:
    """Whether the 2-D array ``a`` at address ``p`` (non-negative strides) touches the
    bytes ``[lo, hi)``."""
    (r, c), (s0, s1) = a.shape, a.strides
    return p < hi and lo < p + (r - 1) * s0 + (c - 1) * s1 + a.itemsize


class Gemm:
    """The CBLAS ``?gemm`` routines of one ILP64 library, called on NumPy operands.

    ``symbols`` maps a NumPy dtype to the routine's name (``{np.float32:
    "cblas_sgemm_64"}``); complex routines take alpha and beta by pointer. ``gemm(x, y,
    out)`` has ``np.matmul(x, y, out)``'s contract and runs the library where NOTE [GEMM
    provider] allows, else ``np.matmul`` itself.
    """

    def __init__(self, lib: ctypes.CDLL, symbols: dict, *, name: str = "",
                 min_macs: int = MIN_MACS, batch_macs: int = BATCH_MACS):
        self.name, self.min_macs, self.batch_macs = name, min_macs, batch_macs
        self._lib = lib  # keeps the library loaded
        self._routines = {}
        self._consts = []  # complex alpha/beta buffers, kept alive
        for dtype, symbol in symbols.items():
            dtype = np.dtype(dtype)
            fn = getattr(lib, symbol)
            if dtype.kind == "c":
                one, zero = np.ones(1, dtype), np.zeros(1, dtype)
                self._consts += [one, zero]
                scalar, alpha, beta = _C_PTR, one.ctypes.data, zero.ctypes.data
            else:
                scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
                alpha, beta = 1.0, 0.0
            fn.restype = None
            fn.argtypes = [_C_INT, _C_INT, _C_INT, _C_I64, _C_I64, _C_I64, scalar, _C_PTR,
                           _C_I64, _C_PTR, _C_I64, scalar, _C_PTR, _C_I64]
            self._routines[dtype] = (fn, alpha, beta)
        self._ptr = _pointer_reader()

    def __repr__(self) -> str:
        return f"Gemm({self.name or self._lib._name!r})"

    def gemm(self, x, y, out=None):
        """``x @ y`` into ``out`` (``np.matmul``'s contract), through the library when it can."""
        if type(out) is np.ndarray and type(x) is np.ndarray and type(y) is np.ndarray:
            nd = out.ndim
            if nd == 2 and x.ndim == 2 and y.ndim == 2:
                if out.size * x.shape[1] >= self.min_macs and \
                        self._gemm2(x, y, out, self.min_macs):
                    return out
            elif nd == 3 and x.ndim == 3 and y.ndim == 3 and self._batched(x, y, out):
                return out
        elif out is None and type(x) is np.ndarray and type(y) is np.ndarray and \
                x.ndim == 2 and y.ndim == 2 and x.dtype == y.dtype and \
                x.dtype in self._routines and x.shape[1] == y.shape[0]:
            res = np.empty((x.shape[0], y.shape[1]), x.dtype)
            if self._gemm2(x, y, res, self.min_macs):
                return res
        return np.matmul(x, y, out)

    def _batched(self, x, y, out) -> bool:
        b, m, n = out.shape
        k = x.shape[2]
        if x.shape[0] != b or y.shape[0] != b or m * n * k < self.batch_macs:
            return False
        if x.shape[1] != m or y.shape[1] != k or y.shape[2] != n or \
                out.dtype not in self._routines:
            return False
        # every matrix of the batch must qualify, else NumPy does all of them
        plans = [self._plan(x[i], y[i], out[i], 0) for i in range(b)]
        if not all(plans):
            return False
        for plan in plans:
            plan[0](*plan[1:])
        return True

    def _gemm2(self, x, y, out, min_macs: int) -> bool:
        plan = self._plan(x, y, out, min_macs)
        if plan is None:
            return False
        plan[0](*plan[1:])
        return True

    def _plan(self, x, y, out, min_macs: int):
        """The routine and its arguments for ``out = x @ y`` (2-D), or None (NumPy's job)."""
        dtype = out.dtype
        entry = self._routines.get(dtype)
        if entry is None or (x.dtype is not dtype and x.dtype != dtype) or \
                (y.dtype is not dtype and y.dtype != dtype):
            return None
        (m, k), (k2, n) = x.shape, y.shape
        if k != k2 or m * n * k < min_macs or not (m and n and k) or out.shape != (m, n) or \
                not out.flags.writeable:
            return None
        e = dtype.itemsize
        s0, s1 = out.strides
        if s1 != e and n != 1:  # F-ordered out: out.T = y.T @ x.T is row-major
            if s0 != e and m != 1:
                return None
            x, y, out, m, n, s0, s1 = y.T, x.T, out.T, n, m, s1, s0
        if m > 1 and (s0 < n * e or s0 % e):
            return None
        ta = operand_layout(m, k, *x.strides, e)
        tb = operand_layout(k, n, *y.strides, e)
        if ta is None or tb is None:
            return None
        ptr = self._ptr
        po, px, py = ptr(out), ptr(x), ptr(y)
        hi = po + (m - 1) * s0 + (n - 1) * s1 + e
        if _overlaps(x, px, po, hi) or _overlaps(y, py, po, hi):
            return None
        fn, alpha, beta = entry
        return (fn, _ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, px, ta[1], py, tb[1], beta, po,
                s0 // e if m > 1 else n)


# -- the provider -------------------------------------------------------------------------------
_MKL_SYMBOLS = {np.float32: "cblas_sgemm_64", np.float64: "cblas_dgemm_64",
                np.complex64: "cblas_cgemm_64", np.complex128: "cblas_zgemm_64"}
_MKL_SONAME = "libmkl_rt.so.3"


def mkl_library() -> str | None:
    """Path of libmkl_rt from the installed ``mkl`` distribution, or None."""
    from importlib import metadata

    try:
        files = metadata.distribution("mkl").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name.startswith("libmkl_rt.so"):
            path = str(f.locate())
            if os.path.exists(path):
                return os.path.realpath(path)
    path = os.path.join(sys.prefix, "lib", _MKL_SONAME)
    return path if os.path.exists(path) else None


# NOTE [MKL threading layer]
# libmkl_rt runs its threads on one of three runtimes, fixed before its first call:
# - INTEL (libiomp5, from intel-openmp): survives fork (its child re-creates the pool), but
#   when GNU's libgomp was loaded first (``import torch``) MKL's OpenMP calls resolve partly
#   into libgomp and multi-threaded GEMMs return wrong values (measured: half the matrix);
# - GNU (libgomp): correct next to torch, but a forked child hangs on its first parallel
#   region once the parent used the pool; a child limited to one thread never enters it;
# - SEQUENTIAL: always safe, ignores set_num_threads.
# So: INTEL unless libgomp is already loaded; then GNU, with a fork handler that gives the
# child one MKL thread (as torch's DataLoader workers set torch.set_num_threads(1)). A
# MKL_THREADING_LAYER in the environment is the user's choice and is left alone.
_INTEL, _SEQUENTIAL, _GNU = 0, 1, 3


def _threading_layer(lib: ctypes.CDLL, pools: list[dict]) -> int | None:
    if os.environ.get("MKL_THREADING_LAYER"):
        return None
    gomp = any(p.get("prefix") == "libgomp" for p in pools)
    layer = _GNU if gomp else _INTEL
    if layer == _INTEL and not os.path.exists(os.path.join(os.path.dirname(lib._name),
                                                           "libiomp5.so")):
        layer = _SEQUENTIAL
    lib.MKL_Set_Threading_Layer(_C_INT(layer))
    if layer == _GNU:
        os.register_at_fork(after_in_child=lambda: lib.MKL_Set_Num_Threads(_C_INT(1)))
    return layer


def _threads_at_load(pools: list[dict]) -> int | None:
    """MKL's pool size at load: ember.set_num_threads's last value, else NumPy's BLAS pool
    (so OPENBLAS_NUM_THREADS and threadpoolctl limits carry over), unless MKL_NUM_THREADS
    says otherwise."""
    from ember.backends import threads

    if threads.requested() is not None:
        return threads.requested()
    if os.environ.get("MKL_NUM_THREADS"):
        return None
    numpy_blas = [p for p in pools if p.get("user_api") == "blas"]
    return int(numpy_blas[0]["num_threads"]) if numpy_blas else None


def _load_mkl() -> Gemm | None:
    path = mkl_library()
    if path is None:
        return None
    import threadpoolctl

    pools = threadpoolctl.threadpool_info()
    lib = ctypes.CDLL(path)
    layer = _threading_layer(lib, pools)
    n = _threads_at_load(pools)
    if n is not None:
        lib.MKL_Set_Num_Threads(_C_INT(n))
    g = Gemm(lib, _MKL_SYMBOLS, name="mkl")
    g.threading_layer = layer
    return g


_provider: list = [None, False]  # [Gemm or None, loaded]


def provider() -> Gemm | None:
    """The active GEMM provider (loading it on first use), or None for NumPy's matmul."""
    if not _provider[1]:
        set_provider(None if os.environ.get("EMBER_BLAS", "").lower() == "numpy"
                     else _load_mkl())
    return _provider[0]


def set_provider(g: Gemm | None) -> None:
    """Route every product through ``g`` (None: NumPy's matmul) from now on."""
    global gemm
    _provider[0], _provider[1] = g, True
    gemm = np.matmul if g is None else g.gemm


def _first_gemm(x, y, out=None):
    provider()
    return gemm(x, y, out)


gemm = _first_gemm
