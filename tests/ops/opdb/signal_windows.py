"""Op-table entries: ``ember.signal.windows`` against ``torch.signal.windows`` (every window,
symmetric and periodic, lengths 0, 1, 2 and more, float32/float64, parameters, errors)."""

from __future__ import annotations

import ember
import ember.signal  # noqa: F401
from tests.opinfo import ErrorInput, OpInfo, SampleInput

TOL = {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12)}
PARAMS = {"bartlett": [{}], "blackman": [{}], "cosine": [{}], "hamming": [{}], "hann": [{}],
          "nuttall": [{}], "exponential": [{}, {"tau": 2.5}],
          "gaussian": [{}, {"std": 0.7}], "general_cosine": [{"a": [0.4, 0.3, 0.3]}],
          "general_hamming": [{}, {"alpha": 0.6}], "kaiser": [{}, {"beta": 3.0}]}


def _window(name):
    return lambda lib, M, **kw: getattr(lib.signal.windows, name)(M, **kw)


def _samples(name):
    def gen(dtype):
        for M in (0, 1, 2, 5, 8):
            for sym in (True, False):
                for kw in PARAMS[name]:
                    yield SampleInput((M,), dict(kw, sym=sym, dtype=getattr(ember, dtype)),
                                      f"M{M}-sym{sym}-{kw}")
        if name == "exponential":
            yield SampleInput((5,), dict(center=1.0, sym=False, dtype=getattr(ember, dtype)),
                              "center")
    return gen


def _errors():
    def e(name, args, kw, match):
        return ErrorInput(SampleInput((name, *args), kw), ValueError, match)
    yield e("hann", (-1,), {}, "non-negative window length")
    yield e("gaussian", (3,), {"std": 0.0}, "Standard deviation must be positive")
    yield e("exponential", (4,), {"center": 1.0}, "Center must be None")
    yield e("exponential", (4,), {"tau": 0.0}, "Tau must be positive")
    yield e("kaiser", (4,), {"beta": -1.0}, "beta must be non-negative")
    yield e("hann", (3,), {"dtype": ember.int64}, "expects float32 or float64")
    yield e("general_cosine", (3,), {"a": []}, "Coefficients cannot be empty")


OPS = [OpInfo(f"signal.windows.{name}", _window(name), _samples(name), dtypes=("float32",
                                                                              "float64"),
              tol=TOL, meta=False) for name in PARAMS]
OPS.append(OpInfo("signal.windows_errors",
                  lambda lib, name, *a, **k: getattr(lib.signal.windows, name)(*a, **k),
                  lambda d: [], dtypes=(), errors=_errors))
