"""Op-table entries: the fused nn operators (softmax, log_softmax) on every shape class.

0-d inputs (dim 0 or -1), empty dims in each position, hostile layouts, the ``dtype=``
argument given by keyword and positionally; the dim as a 0-d integer tensor (torch takes it
as the int; meta=False there: a meta tensor holds no int).
"""

from __future__ import annotations

import ember
from tests.opinfo import COMPLEX, FLOATS, OpInfo, SampleInput, hostile

LOOSE = {"float32": (1e-5, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}
SHAPES_DIMS = [((), 0), ((), -1), ((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2),
               ((0, 3), 1), ((3, 0), 1), ((3, 0), 0), ((2, 0, 4), 2)]


def _softmax_samples(d):
    for shape, dim in SHAPES_DIMS:
        for lay, x in hostile(shape, d, layouts=("contiguous", "permuted", "strided")):
            yield SampleInput((x, dim), {}, f"{lay}{list(shape)}dim{dim}")
    x = hostile((3, 4), d, layouts=("strided",))
    for _, t in x:
        yield SampleInput((t, 1), dict(dtype=ember.float64), "dtype-kw")
        yield SampleInput((t, 0, ember.float64), {}, "dtype-positional")
    yield SampleInput((ember.tensor(1.5, dtype=getattr(ember, d)), 0), dict(dtype=ember.float64),
                      "0-d-dtype")


def _fn(name):
    return lambda lib, x, dim, *a, **k: getattr(lib, name)(x, dim, *a, **k)


def _method(name):
    return lambda lib, x, dim, *a, **k: getattr(x, name)(dim, *a, **k)


def _functional(name):
    return lambda lib, x, dim, *a, **k: getattr(lib.nn.functional, name)(x, dim, *a, **k)


def _tensor_dim_samples(d):
    for lay, t in hostile((3, 4), d, layouts=("permuted", "strided")):
        yield SampleInput((t, ember.tensor(-1)), {}, f"{lay}-0-d-tensor-dim")


OPS = [
    # complex: torch's kernels refuse it (NotImplementedError), empty inputs come back as they are
    OpInfo("softmax", _fn("softmax"), _softmax_samples, dtypes=FLOATS + COMPLEX, tol=LOOSE),
    OpInfo("log_softmax", _fn("log_softmax"), _softmax_samples, dtypes=FLOATS + COMPLEX,
           tol=LOOSE),
    OpInfo("Tensor.softmax", _method("softmax"), _softmax_samples, dtypes=FLOATS[:2], tol=LOOSE),
    OpInfo("Tensor.log_softmax", _method("log_softmax"), _softmax_samples, dtypes=FLOATS[:2],
           tol=LOOSE),
    OpInfo("F.softmax", _functional("softmax"), _softmax_samples, dtypes=FLOATS[:2], tol=LOOSE),
    OpInfo("F.log_softmax", _functional("log_softmax"), _softmax_samples, dtypes=FLOATS[:2],
           tol=LOOSE),
    *[OpInfo(f"{name}_tensor_dim", _fn(name), _tensor_dim_samples, dtypes=FLOATS[:2] + COMPLEX,
             tol=LOOSE, meta=False) for name in ("softmax", "log_softmax")],
]
