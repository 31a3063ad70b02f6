"""Indexed row accumulation in C: ``target[a, idx[k], :] += source[a, k, :]``, ``k`` in order.

This is the core of ``index_add`` along a dimension, and so of embedding's backward (the
gradient rows of repeated tokens summed into one weight row). ``np.add.at`` does the same
additions one element at a time through its generic indexing machinery (about 7 ns an
element); the C loop adds whole rows, vectorized, in the same order: for every target
element the contributions arrive in increasing ``k``, so both give identical bits. The C form
serves contiguous float32/float64 data when a C compiler is there (built once with
``ember._internal.cc``, cached on disk); callers fall back to ``np.add.at`` otherwise.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ember._internal import cc

__all__ = ["add_rows"]

_TYPES = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}

_ADD_ROWS_C = """
void add_rows_{sfx}(int64_t outer, int64_t rows, int64_t n, int64_t d, {t}* restrict out,
                    const {t}* restrict src, const int64_t* restrict idx) {{
    for (int64_t a = 0; a < outer; a++) {{
        {t}* o = out + a * rows * d;
        const {t}* s = src + a * n * d;
        for (int64_t k = 0; k < n; k++) {{
            {t}* restrict orow = o + idx[k] * d;
            const {t}* restrict srow = s + k * d;
            for (int64_t j = 0; j < d; j++)
                orow[j] += srow[j];
        }}
    }}
}}
"""


@functools.lru_cache(maxsize=1)
def _library():
    """The built C functions, or None (no C compiler, or the build failed: NumPy runs)."""
    if cc.compiler() is None:  # an optional fast path: np.add.at is the same, quietly
        return None
    parts, symbols = ["#include <stdint.h>\n"], []
    for t, sfx in _TYPES.values():
        parts.append(_ADD_ROWS_C.format(t=t, sfx=sfx))
        symbols.append(f"add_rows_{sfx}")
    lib = cc.build("".join(parts), symbols, who="ember index_add", fallback="np.add.at")
    if lib is None:
        return None
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for name in symbols:
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = [i64, i64, i64, i64, ptr, ptr, ptr]
    return lib


def add_rows(target: np.ndarray, dim: int, idx: np.ndarray, values: np.ndarray) -> bool:
    """``target[..., idx[k], ...] += values[..., k, ...]`` along ``dim`` in increasing ``k``,
    in C; returns False (nothing done) when the C form does not apply: another dtype,
    non-contiguous or overlapping arrays, not NumPy's, or no compiler. ``idx`` must be in
    range."""
    if not (type(target) is np.ndarray and type(values) is np.ndarray and
            type(idx) is np.ndarray):
        return False  # (a device's arrays, borrowing this kernel)
    types = _TYPES.get(target.dtype)
    if types is None or values.dtype != target.dtype or target.ndim == 0 or \
            not (target.flags.c_contiguous and target.flags.writeable and
                 values.flags.c_contiguous) or values.ndim != target.ndim or \
            np.may_share_memory(target, values):
        return False
    lib = _library()
    if lib is None:
        return False
    idx = np.ascontiguousarray(idx, np.int64).reshape(-1)
    shape = target.shape
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    if values.shape != shape[:dim] + (idx.size,) + shape[dim + 1:]:
        return False
    getattr(lib, f"add_rows_{types[1]}")(outer, shape[dim], idx.size, inner,
                                         target.ctypes.data, values.ctypes.data,
                                         idx.ctypes.data)
    return True
