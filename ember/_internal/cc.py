"""Building and loading C source at run time: gcc, a content-addressed disk cache, ctypes.

The compiler's C backend (``ember.compiler``) and the CPU kernels that have a C form (the fused
optimizer steps) build their code here. The cache key is a sha256 of the source, the exact
command line, ``gcc --version`` and the CPU identity (``-march=native`` binaries are not
portable). Entries live in ``$EMBER_CACHE_DIR/kernels/<2 hex>/<hash>.so`` (default
``~/.cache/ember``), written to a temporary name and ``os.replace``d (atomic across processes).
An entry that fails to load (truncated, corrupt) is rebuilt. When gcc is missing or a build
fails, :func:`build` warns once per caller and returns ``None``: the caller falls back to its
NumPy code.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings

__all__ = ["build", "stats", "cache_dir", "compiler", "num_threads", "FLAGS"]

stats = {"compiles": 0, "disk_hits": 0, "failures": 0}
_warned: set = set()
_loaded: dict[str, ctypes.CDLL] = {}

FLAGS = ("-O3", "-march=native", "-mprefer-vector-width=512", "-fPIC", "-shared", "-std=gnu11",
         "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fopenmp-simd")
LIBS = ("-lm",)


def num_threads() -> int:
    """Threads for the kernels' parallel loops: ``$EMBER_NUM_THREADS``, else
    ``$OMP_NUM_THREADS``, else the CPUs this process may use (1 when that is 2 or fewer: on a
    small machine a spinning worker competes with the Python thread)."""
    for var in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(var, "").split(",")[0].strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return n if n > 2 else 1


def compiler() -> str | None:
    """Path of the C compiler (``$CC`` or ``gcc``), or None when not on ``PATH``."""
    return shutil.which(os.environ.get("CC", "gcc"))


def cache_dir() -> str:
    """``$EMBER_CACHE_DIR`` or ``~/.cache/ember`` (created on demand)."""
    return os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                             "ember")


@functools.lru_cache(maxsize=4)
def _compiler_id(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


@functools.lru_cache(maxsize=1)
def _cpu_id() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        import platform

        return platform.processor()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _compile(cc: str, source: str, out: str, libs) -> str | None:
    """Compile ``source`` to ``out``; returns the error text on failure."""
    cmd = [cc, *FLAGS, "-x", "c", "-", "-o", out, *libs]
    try:
        p = subprocess.run(cmd, input=source, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return None if p.returncode == 0 else (p.stderr or f"exit status {p.returncode}")


def build(source: str, symbols: list[str], openmp: bool = False, libs: tuple = LIBS,
          who: str = "ember.compile(backend='c')",
          fallback: str = "the NumPy backend") -> ctypes.CDLL | None:
    """Compile (or load from the disk cache) ``source``; None (after one warning) on failure.

    ``symbols`` must resolve in the loaded library, otherwise the entry is rebuilt.
    ``openmp`` adds ``-fopenmp`` (libgomp; its threads follow ``OMP_NUM_THREADS``, with a
    passive wait policy unless ``OMP_WAIT_POLICY`` is set). ``libs`` are the link flags;
    ``who`` and ``fallback`` name the caller and what it does instead in the warnings.
    """
    cc = compiler()
    if cc is None:
        _warn_once(f"nocc:{who}", f"{who}: no C compiler found (gcc not on PATH); "
                   f"using {fallback} instead")
        return None
    if openmp:
        libs = ("-fopenmp", *libs)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    key_text = "\0".join([source, cc, *FLAGS, *libs, _compiler_id(cc), _cpu_id()])
    h = hashlib.sha256(key_text.encode()).hexdigest()
    if h in _loaded:
        return _loaded[h]
    d = os.path.join(cache_dir(), "kernels", h[:2])
    path = os.path.join(d, f"{h}.so")
    lib = _try_load(path, symbols)
    if lib is not None:
        stats["disk_hits"] += 1
        _loaded[h] = lib
        return lib
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=d)
        os.close(fd)
    except OSError as e:
        _warn_once(f"cache:{who}", f"{who}: cannot write the kernel cache ({e}); "
                   f"using {fallback} instead")
        return None
    err = _compile(cc, source, tmp, libs)
    stats["compiles"] += 1
    if err is not None:
        stats["failures"] += 1
        _remove(tmp)
        _warn_once(f"build:{who}", f"{who}: building the generated C failed; "
                   f"using {fallback} instead. Compiler output:\n{err[-2000:]}")
        return None
    os.replace(tmp, path)
    lib = _try_load(path, symbols)
    if lib is None:
        stats["failures"] += 1
        _warn_once(f"load:{who}", f"{who}: the built library does not load; "
                   f"using {fallback} instead")
        return None
    _loaded[h] = lib
    return lib


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _try_load(path: str, symbols) -> ctypes.CDLL | None:
    if not os.path.exists(path):
        return None
    try:
        lib = ctypes.CDLL(path)
        for s in symbols:
            getattr(lib, s)
        return lib
    except (OSError, AttributeError):
        _remove(path)           # corrupt entry: rebuild
        return None
