"""The C backend's toolchain: ``ember._internal.cc`` (gcc, the disk cache, ctypes) plus the
probe for glibc's vector math library that generated kernels link when it is usable."""

from __future__ import annotations

import ctypes
import functools
import os
import tempfile

from ember._internal import cc as _cc
from ember._internal.cc import FLAGS, LIBS, cache_dir, compiler, num_threads, stats

__all__ = ["build", "stats", "cache_dir", "compiler", "vector_math_ok", "num_threads", "FLAGS"]


@functools.lru_cache(maxsize=1)
def vector_math_ok() -> bool:
    """Whether gcc can call glibc's vector math library (libmvec) from simd loops here."""
    from ember.compiler.codegen_c import _VEC_FNS, PRELUDE, vector_decls

    cc = compiler()
    if cc is None:
        return False
    body = []
    for t, suf in (("float", "f"), ("double", "")):
        calls = " + ".join(f"{f}{suf}(a[i], a[i])" if f == "pow" else f"{f}{suf}(a[i])"
                           for f in _VEC_FNS)
        body.append(f"void f{suf or 'd'}({t}* restrict a, int n) {{\n#pragma omp simd\n"
                    f"for (int i = 0; i < n; i++) a[i] = {calls};\n}}\n")
    src = PRELUDE + vector_decls() + "".join(body)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "probe.so")
        if _cc._compile(cc, src, out, ("-lmvec", "-lm")) is not None:  # all symbols must resolve
            return False
        try:
            ctypes.CDLL(out)
        except OSError:
            return False
    return True


def build(source: str, symbols: list[str], openmp: bool = False) -> ctypes.CDLL | None:
    """Compile (or load from the disk cache) a graph's generated C; None (after one warning)
    when gcc is missing or the build fails, and the graph runs on the NumPy backend."""
    libs = ("-lmvec", *LIBS) if vector_math_ok() else LIBS
    return _cc.build(source, symbols, openmp, libs)
