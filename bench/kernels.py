"""Kernel throughput: large elementwise and matmul work in ember and in PyTorch, one process.

Same method as ``overhead.py`` (single thread, interleaved repetitions, medians): here the
per-call overhead is noise and the kernels (NumPy/OpenBLAS for ember) dominate.

    python bench/kernels.py [--repeat 5]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy or torch is imported

import argparse  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import both, machine, report  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    n = 4 * 1024 * 1024
    (a, b), (ta, tb) = both(*rng.standard_normal((2, n), dtype=np.float32))
    (m, k), (tm, tk) = both(*rng.standard_normal((2, 1024, 1024), dtype=np.float32))
    return [
        ("add 4M float32", lambda: a + b, lambda: ta + tb),
        ("add_ 4M float32 (in place)", lambda: a.add_(b), lambda: ta.add_(tb)),
        ("matmul 1024x1024 float32", lambda: m @ k, lambda: tm @ tk),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timing repetitions per op")
    args = parser.parse_args()
    print(f"# kernel throughput; median of {args.repeat} interleaved repetitions\n"
          f"# {machine()}")
    report(cases(), args.repeat, unit="ms")


if __name__ == "__main__":
    main()
