"""Gradients through compiled training regions against eager ember, on the op table's samples.

Each float64 sample of every differentiable entry (tests/ops/opdb) is traced with ``make_fx``,
compiled for training (``ember.compiler.aot``: joint graph, partition, forward and backward
compiled with the NumPy backend) and differentiated with random cotangents; the outputs and
the input gradients must equal eager ember's to float64 rounding. Samples whose region the
training path declines (an output that is a view of an input, data-dependent code) are
skipped, as are random and uninitialised ops.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # the op table's module needs it; the 3.12/3.13 venvs have none

import ember  # noqa: E402
from ember.compiler import aot, make_fx  # noqa: E402
from ember.compiler.meta import MetaUnsupported  # noqa: E402
from ember.testing import assert_close  # noqa: E402
from tests.compiler.test_backends_opdb import (  # noqa: E402
    INFOS,
    NOT_TRACEABLE,
    SKIP_WORDS,
    _flatten,
    _rebuild,
)

GRAD_INFOS = [i for i in INFOS if "float64" in i.dtypes]
RTOL, ATOL = 1e-10, 1e-12  # float64: a few roundings of slack for reordered sums


def _leaf(t):
    if isinstance(t, ember.Tensor) and t.dtype.is_floating_point:
        return t.detach().requires_grad_(True)
    return t


def _float_outputs(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad]


def _cotangents(outs, seed):
    g = ember.Generator().manual_seed(seed)
    return [ember.randn(o.shape, dtype=o.dtype, generator=g) for o in outs]


@pytest.mark.parametrize("info", GRAD_INFOS, ids=[i.name for i in GRAD_INFOS])
def test_compiled_gradients_equal_eager(info):
    if any(w in info.name for w in SKIP_WORDS):
        pytest.skip("random or uninitialised values")
    if info.name.removesuffix("_grad") in NOT_TRACEABLE or info.name.startswith(NOT_TRACEABLE[:3]):
        pytest.skip("not traceable by a dispatch mode")
    checked = 0
    for k, sample in enumerate(list(info.samples("float64"))[:3]):
        tensors, aspec, kspec = _flatten(sample.args, sample.kwargs)
        tensors = [_leaf(t) for t in tensors]
        wants = [t for t in tensors if isinstance(t, ember.Tensor) and t.requires_grad]
        if not wants:
            continue

        def fn(*ts, aspec=aspec, kspec=kspec):
            return info.fn(ember, *_rebuild(aspec, ts), **_rebuild(kspec, ts))

        try:
            want = fn(*tensors)
            wouts = _float_outputs(want)
            if not wouts:
                continue
            cot = _cotangents(wouts, k)
            wgrads = ember.autograd.grad(wouts, wants, cot, allow_unused=True)
        except Exception:  # noqa: BLE001 - error samples are the op table's business
            continue
        try:
            gm = make_fx(fn)(*tensors)
            region = aot.compile_training(gm.graph, tensors, "numpy")
        except (MetaUnsupported, aot.AotUnsupported, RuntimeError, NotImplementedError,
                TypeError):
            continue
        got = region(*tensors)
        gouts = _float_outputs(got)
        assert len(gouts) == len(wouts)
        for g, w in zip(gouts, wouts):
            assert g.shape == w.shape and g.dtype is w.dtype
            assert_close(g, w, rtol=RTOL, atol=ATOL, equal_nan=True, check_stride=False)
        ggrads = ember.autograd.grad(gouts, wants, cot, allow_unused=True)
        for g, w in zip(ggrads, wgrads):
            assert (g is None) == (w is None) or (
                (g if w is None else w).abs().max().item() == 0)
            if g is not None and w is not None:
                assert_close(g, w, rtol=RTOL, atol=ATOL, equal_nan=True, check_stride=False)
        checked += 1
    if not checked:
        pytest.skip("no sample compiled for training")
