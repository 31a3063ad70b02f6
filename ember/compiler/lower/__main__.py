"""``python -m ember.compiler.lower``: compile a small function with the C backend and print
the kernel it generated (``make tour`` runs it).

The function is a GELU-tanh chain feeding a softmax: ``ember.compile`` captures one graph,
the lowering fuses the pointwise chain into the softmax's row passes, and the result is one
C kernel (shown) plus a few lines of Python glue.
"""

from __future__ import annotations

import math

import numpy as np

from ember.compiler import cc, make_fx
from ember.compiler.backends import compile_graph
from ember.tensor.tensor import from_numpy


def _fn(x):
    g = 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)).tanh())
    return g.softmax(-1)


def main() -> None:
    """Print the generated C of ``_fn`` and check it against eager ember."""
    x = from_numpy(np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32))
    print("ember.compile(backend='c') of  softmax(gelu_tanh(x), -1)  on a (8, 256) float32 x")
    if cc.compiler() is None:
        print("  (no C compiler on PATH: the C backend falls back to the NumPy backend)")
        return
    fn = compile_graph(make_fx(_fn)(x).graph, [x], "c")
    text = fn.c_source
    start = text.index("void ember_k0")
    print(f"\n{fn.kernels} kernel(s), {fn.calls} foreign call(s) per run; the kernel:\n")
    print(text[start:text.index("\n}\n", start) + 2])
    print("the Python glue around it:\n")
    print(fn.source)
    got = fn(x)
    err = (got - _fn(x)).abs().max().item()
    print(f"largest difference to eager ember: {err:.2e}")


if __name__ == "__main__":
    main()
