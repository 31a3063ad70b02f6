"""Gradients through compiled training regions against eager ember, on the op table's samples.

Each float64 sample of every differentiable entry (tests/ops/opdb), and each complex128 sample of
the entries that list complex dtypes, is traced with ``make_fx``,
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
    """A float or complex sample as a leaf requiring grad (a conjugated view stays one)."""
    if isinstance(t, ember.Tensor) and t.dtype.is_differentiable:
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
    _check_gradients(info, "float64", 3)


COMPLEX_GRAD_INFOS = [i for i in INFOS if "complex128" in i.dtypes]


@pytest.mark.parametrize("info", COMPLEX_GRAD_INFOS, ids=[i.name for i in COMPLEX_GRAD_INFOS])
def test_compiled_gradients_equal_eager_complex(info):
    """complex128 samples (hostile layouts and conjugated views): complex leaves and
    cotangents, gradients by torch's conjugate-Wirtinger convention as eager computes them."""
    _check_gradients(info, "complex128", 6)


def _check_gradients(info, dtype, n_samples):
    if any(w in info.name for w in SKIP_WORDS):
        pytest.skip("random or uninitialised values")
    if info.name.removesuffix("_grad") in NOT_TRACEABLE or info.name.startswith(NOT_TRACEABLE[:3]):
        pytest.skip("not traceable by a dispatch mode")
    checked, why = 0, []
    for k, sample in enumerate(list(info.samples(dtype))[:n_samples]):
        tensors, aspec, kspec = _flatten(sample.args, sample.kwargs)
        tensors = [_leaf(t) for t in tensors]
        wants = [t for t in tensors if isinstance(t, ember.Tensor) and t.requires_grad]
        if not wants:
            why.append("no input requires grad")
            continue

        def fn(*ts, aspec=aspec, kspec=kspec):
            return info.fn(ember, *_rebuild(aspec, ts), **_rebuild(kspec, ts))

        try:
            want = fn(*tensors)
            wouts = _float_outputs(want)
            if not wouts:
                why.append("no differentiable output")
                continue
            cot = _cotangents(wouts, k)
            wgrads = ember.autograd.grad(wouts, wants, cot, allow_unused=True)
        except Exception as e:  # noqa: BLE001 - error samples are the op table's business
            why.append(f"eager raises {type(e).__name__}")
            continue
        try:
            gm = make_fx(fn)(*tensors)
            region = aot.compile_training(gm.graph, tensors, "numpy")
        except (MetaUnsupported, aot.AotUnsupported, RuntimeError, NotImplementedError,
                TypeError) as e:
            why.append(f"{type(e).__name__}: {str(e)[:120]}")
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
        pytest.skip("no sample compiled for training" +
                    (f" ({max(set(why), key=why.count)})" if why else ""))
