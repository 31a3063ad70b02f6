"""Op-table entries: ``ember.masked`` against ``torch.masked`` (reductions over one or several
dims with keepdim, full and broadcast masks, rows with nothing unmasked, normalisations)."""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.masked  # noqa: F401
from tests.opinfo import COMPLEX, FLOATS, OpInfo, SampleInput, make

_RNG = np.random.default_rng(77)


def _masks():
    full = _RNG.random((3, 4, 5)) > 0.5
    full[1, 2] = False  # a row with nothing unmasked
    return [ember.tensor(full), ember.tensor(_RNG.random((4, 1)) > 0.3), None]


def _reduce_samples(dims, keepdims=(False, True)):
    def gen(dtype):
        for lay in ("contiguous", "permuted", "strided"):
            x = make((3, 4, 5), dtype, layout=lay)
            for mask in _masks():
                for dim in dims:
                    for kd in keepdims:
                        yield SampleInput((x, dim), dict(keepdim=kd, mask=mask),
                                          f"{lay}-d{dim}-kd{kd}-mask{mask is not None}")
    return gen


def _dim_samples(dtype):
    for lay in ("contiguous", "permuted"):
        x = make((3, 4, 5), dtype, layout=lay)
        for mask in _masks():
            yield SampleInput((x, 1), dict(mask=mask), f"{lay}-mask{mask is not None}")


def _norm_samples(dtype):
    x = make((3, 4, 5), dtype, layout="permuted")
    for mask in _masks():
        for ord in (2.0, 1.0, math.inf, -math.inf, 3.0):
            yield SampleInput((x, ord, 1), dict(mask=mask), f"ord{ord}-{mask is not None}")


def _var_samples(dtype):
    x = make((3, 4, 5), dtype, layout="strided")
    for mask in _masks():
        for ub in (False, True):
            for dim in (1, (0, 2)):
                yield SampleInput((x, dim, ub), dict(mask=mask), f"{dim}-{ub}")


def _fn(name):
    return lambda lib, *a, **k: getattr(lib.masked, name)(*a, **k)


def _logaddexp(lib, x, y, m):
    return lib.masked.logaddexp(x, y, input_mask=m, other_mask=None if m is None else ~m)


OPS = [OpInfo(f"masked.{name}", _fn(name), _reduce_samples((1, (0, 2), None)),
              dtypes=FLOATS[:2] + COMPLEX) for name in ("sum", "amax", "amin", "mean", "logsumexp")]
OPS += [
    OpInfo("masked.prod", _fn("prod"), _reduce_samples((1, None)), dtypes=FLOATS[:2]),
    OpInfo("masked.argmax", _fn("argmax"), _reduce_samples((1,), (False,)),
           dtypes=FLOATS[:2] + COMPLEX),
    OpInfo("masked.argmin", _fn("argmin"), _reduce_samples((1,), (False,)),
           dtypes=FLOATS[:2] + COMPLEX),
    OpInfo("masked.median", _fn("median"), _reduce_samples((2,)), dtypes=FLOATS[:2]),
    OpInfo("masked.norm", _fn("norm"), _norm_samples, dtypes=FLOATS[:2]),
    OpInfo("masked.normalize", _fn("normalize"), _norm_samples, dtypes=FLOATS[:2]),
    OpInfo("masked.var", _fn("var"), _var_samples, dtypes=FLOATS[:2] + COMPLEX),
    OpInfo("masked.std", _fn("std"), _var_samples, dtypes=FLOATS[:2] + COMPLEX),
    OpInfo("masked.logaddexp", _logaddexp,
           lambda d: [SampleInput((make((3, 4), d), make((3, 4), d, layout="permuted"), m), {},
                                  f"mask{m is not None}")
                      for m in (ember.tensor(_RNG.random((3, 4)) > 0.5), None)],
           dtypes=FLOATS[:2] + COMPLEX),
]
# complex: torch.masked refuses a complex softmax with a mask (TypeError from its fill lookup)
OPS += [OpInfo(f"masked.{name}", _fn(name), _dim_samples, dtypes=FLOATS[:2] + COMPLEX)
        for name in ("softmax", "log_softmax", "softmin", "cumsum", "cumprod")]
