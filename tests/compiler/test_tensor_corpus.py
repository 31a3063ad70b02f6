"""Tensor programs compiled with each backend equal eager ember (values, shapes, dtypes,
structure), with the expected number of graph breaks."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compiler import explain
from tests.compiler.tensor_corpus import BREAKS, CASES


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    elif isinstance(a, dict):
        assert type(b) is dict and list(a) == list(b)
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor) and a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    else:
        assert a == b


_IDS = [f.__name__ for f, _ in CASES]


# numpy backend cases expected to fail (none now; writes through views of intermediates and
# arrays over ember results were fixed in the backend)
_NUMPY_VIEW_WRITES: set[str] = set()


@pytest.mark.parametrize("backend", ["eager", "numpy"])
@pytest.mark.parametrize("fn,make_args", CASES, ids=_IDS)
def test_tensor_corpus(fn, make_args, backend, request):
    if backend == "numpy" and fn.__name__ in _NUMPY_VIEW_WRITES:
        request.applymarker(pytest.mark.xfail(reason="numpy backend: writes through views of "
                                              "intermediates", strict=True))
    cf = ember.compile(fn, backend=backend)
    for _ in range(2):
        _close(cf(*make_args()), fn(*make_args()))
    args = make_args()
    _close(args, make_args())      # inputs not mutated unless the program does so


@pytest.mark.parametrize("fn,make_args", CASES, ids=_IDS)
def test_tensor_corpus_breaks(fn, make_args):
    out = explain(fn)(*make_args())
    if fn.__name__ in BREAKS or fn.__name__ == "t_item_break":
        assert out.graph_break_count == 1
    else:
        assert out.graph_break_count == 0, [b.reason for b in out.break_reasons]
        assert not out.native_frames
