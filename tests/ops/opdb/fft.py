"""Op-table entries: ``ember.fft`` against ``torch.fft``.

Frequencies (``fftfreq``/``rfftfreq``: lengths 0, 1, even and odd, spacings of either sign
and zero, every floating dtype) and shifts (``fftshift``/``ifftshift`` over hostile layouts,
every dim, one dim, several, negative and repeated dims), with torch's errors.
"""

from __future__ import annotations

import ember
from tests.opinfo import ALL, ErrorInput, OpInfo, SampleInput, hostile

FREQ_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _freq(name):
    return lambda lib, *a, **kw: getattr(lib.fft, name)(*a, **kw)


def _freq_samples(dtype):
    d = getattr(ember, dtype)
    for n in (0, 1, 4, 5, 8, -1, -3):
        for spacing in (1.0, 0.5, 3, -0.25):
            yield SampleInput((n, spacing), {"dtype": d}, f"n{n}-d{spacing}")
    yield SampleInput((4,), {"dtype": d}, "default-spacing")
    yield SampleInput((4, 0.0), {"dtype": d}, "zero-spacing")
    yield SampleInput((3,), {"dtype": d, "requires_grad": True}, "requires_grad")


SHIFT_SHAPES = [((5,), (None, 0, -1)), ((4, 3), (None, 1, (0, 1), (-1, 0), (0, 0))),
                ((2, 5, 3), (None, (2,), (0, 2), -2)), ((0, 3), (None, 1)), ((1, 1), (None,))]


def _shift_samples(dtype):
    for shape, dims in SHIFT_SHAPES:
        for lay, t in hostile(shape, dtype):
            for dim in dims:
                kw = {} if dim is None else {"dim": dim}
                yield SampleInput((t,), kw, f"{lay}{list(shape)}-dim{dim}")


def _shift(name):
    return lambda lib, x, **kw: getattr(lib.fft, name)(x, **kw)


def _freq_errors():
    for name in ("fftfreq", "rfftfreq"):
        yield ErrorInput(SampleInput((name, 4), {"dtype": ember.int64}), RuntimeError,
                         "requires a floating point or complex dtype")
        yield ErrorInput(SampleInput((name, -5), {}), RuntimeError, "negative dimension")


def _shift_errors():
    for name in ("fftshift", "ifftshift"):
        yield ErrorInput(SampleInput((name, ember.tensor(3.0)), {}), RuntimeError,
                         "`shifts` required")
        yield ErrorInput(SampleInput((name, ember.arange(4.0)), {"dim": 2}), IndexError,
                         "Dimension out of range")


def _by_name(lib, name, *args, **kwargs):
    return getattr(lib.fft, name)(*args, **kwargs)


OPS = [
    *(OpInfo(f"fft.{name}", _freq(name), _freq_samples, dtypes=FREQ_DTYPES, meta=False)
      for name in ("fftfreq", "rfftfreq")),
    *(OpInfo(f"fft.{name}", _shift(name), _shift_samples, dtypes=ALL)
      for name in ("fftshift", "ifftshift")),
    OpInfo("fft.freq_errors", _by_name, lambda d: [], dtypes=(), errors=_freq_errors),
    OpInfo("fft.shift_errors", _by_name, lambda d: [], dtypes=(), errors=_shift_errors),
]
