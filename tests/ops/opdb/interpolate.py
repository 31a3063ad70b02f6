"""Op-table entries: ``F.interpolate``'s nearest-exact, area, bicubic, trilinear and 5-d
nearest modes (sizes and scale factors, up and down, ``align_corners``,
``recompute_scale_factor``), antialiased bilinear/bicubic, on hostile layouts, and its
mode/rank errors."""

from __future__ import annotations

import ember
import ember.nn.functional  # noqa: F401
from tests.opinfo import COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput, make

TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}
SPATIAL = {3: (5,), 4: (5, 7), 5: (4, 5, 3)}
SIZES = {3: (3,), 4: (3, 9), 5: (6, 2, 5)}


def _fn(lib, x, **kw):
    return lib.nn.functional.interpolate(x, **kw)


def _samples(mode, ranks, corners=(None,)):
    def gen(dtype):
        for nd in ranks:
            shape = (2, 3) + SPATIAL[nd]
            for lay in ("contiguous", "permuted", "strided"):
                x = make(shape, dtype, layout=lay)
                for kw in (dict(size=SIZES[nd]), dict(scale_factor=1.7),
                           dict(scale_factor=0.6), dict(size=(1,) * (nd - 2)),
                           dict(scale_factor=2.5, recompute_scale_factor=True),
                           dict(scale_factor=tuple([1.5, 0.5, 2.0][:nd - 2]))):
                    for ac in corners:
                        k = dict(kw, mode=mode)
                        if ac is not None:
                            k["align_corners"] = ac
                        yield SampleInput((x,), k, f"{lay}{nd}d-{kw}-ac={ac}")
            yield SampleInput((make((0, 3) + SPATIAL[nd], dtype),), dict(size=SIZES[nd],
                              mode=mode), f"empty-batch-{nd}d")
    return gen


def _antialias_samples(mode):
    def gen(dtype):
        for lay in ("contiguous", "permuted", "strided"):
            x = make((2, 3, 11, 7), dtype, layout=lay)
            for kw in (dict(size=(3, 9)), dict(scale_factor=0.3), dict(scale_factor=1.7),
                       dict(size=(1, 1)), dict(scale_factor=(0.5, 2.0))):
                for ac in (False, True):
                    yield SampleInput((x,), dict(kw, mode=mode, align_corners=ac,
                                                 antialias=True), f"{lay}-{kw}-ac={ac}")
    return gen


def _errors():
    def e(x, kw, err, match=None):
        return ErrorInput(SampleInput((x,), kw), err, match)
    yield e(ember.ones(1, 1, 4, 4), dict(size=2, mode="trilinear"), NotImplementedError,
            "trilinear mode needs 5D input")
    yield e(ember.ones(1, 1, 4), dict(size=2, mode="bicubic"), NotImplementedError,
            "bicubic mode needs 4D input")
    yield e(ember.ones(1, 1, 4, 4), dict(size=2, mode="area", align_corners=True), ValueError,
            "align_corners option can only be set")
    for mode in ("nearest-exact", "nearest", "bilinear"):
        yield e(ember.ones(1, 0, 4, 4), dict(size=2, mode=mode), RuntimeError,
                "Non-empty 4D data tensor expected")
        yield e(ember.ones(1, 2, 0, 4), dict(size=2, mode=mode), RuntimeError,
                "Non-empty 4D data tensor expected")
    yield e(ember.ones(1, 0, 4), dict(size=2, mode="linear"), RuntimeError,
            "Non-empty 3D data tensor expected")
    yield e(ember.ones(1, 1, 4, 4), dict(size=2, mode="nearest", antialias=True), ValueError,
            "Anti-alias option is restricted")
    yield e(ember.ones(1, 1, 4), dict(size=2, mode="linear", antialias=True), ValueError,
            "Anti-alias option is restricted")


# complex: torch's index/weight kernels refuse it (area, a pooling, is left out)
OPS = [
    OpInfo("interpolate_nearest_exact", _fn, _samples("nearest-exact", (3, 4, 5)),
           FLOATS + COMPLEX, tol=TOL),
    OpInfo("interpolate_nearest_5d", _fn, _samples("nearest", (5,)), FLOATS + COMPLEX, tol=TOL),
    OpInfo("interpolate_area", _fn, _samples("area", (3, 4, 5)), FLOATS[:2], tol=TOL),
    OpInfo("interpolate_trilinear", _fn, _samples("trilinear", (5,), (False, True)),
           FLOATS[:2] + COMPLEX, tol=TOL),
    OpInfo("interpolate_bicubic", _fn, _samples("bicubic", (4,), (False, True)),
           FLOATS[:2] + COMPLEX, tol=TOL),
    OpInfo("interpolate_bilinear_antialias", _fn, _antialias_samples("bilinear"),
           FLOATS[:2] + COMPLEX, tol=TOL),
    OpInfo("interpolate_bicubic_antialias", _fn, _antialias_samples("bicubic"),
           FLOATS[:2] + COMPLEX, tol=TOL),
    OpInfo("interpolate_errors", _fn, lambda d: [], dtypes=(), errors=_errors),
]
