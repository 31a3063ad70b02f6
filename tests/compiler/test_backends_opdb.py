"""The NumPy backend against eager ember on the op table's samples (tests/ops/opdb).

Each entry's function is traced with ``make_fx`` on its samples and compiled with the NumPy
backend (entries listing complex dtypes: their complex samples too, on the NumPy and the C
backend); the result must equal eager ember (shape, dtype, values within the entry's tolerance,
and the inputs' contents after the call, for in-place ops). Entries that cannot be traced
without data (data-dependent shapes, ``.item()``) or that are random are skipped per sample.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

pytest.importorskip("torch")  # the op table's module needs it; the 3.12/3.13 venvs have none

import ember  # noqa: E402
from ember.compiler import cc, make_fx  # noqa: E402
from ember.compiler.backends import compile_graph  # noqa: E402
from ember.compiler.meta import MetaUnsupported, lazy_bits  # noqa: E402
from ember.testing import assert_close  # noqa: E402
from tests.ops import opdb  # noqa: E402


def _infos():
    infos = []
    for mod in pkgutil.iter_modules(opdb.__path__):
        infos += importlib.import_module(f"tests.ops.opdb.{mod.name}").OPS
    return [i for i in infos if i.compare_values]


INFOS = _infos()
SKIP_WORDS = ("rand", "dropout", "bernoulli", "multinomial", "normal", "uniform", "exponential",
              "geometric", "cauchy", "log_normal", "empty", "poisson")
# Entries make_fx cannot trace faithfully: the sort family's table functions gather through
# NumPy with a separate meta branch, and these in-place metadata changes are not operator
# calls (no dispatch mode sees them).
NOT_TRACEABLE = ("sort", "topk", "kthvalue", "resize_", "resize_as_", "set_", "set_storage",
                 "squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
                 "as_strided_")


def _flatten(args, kwargs):
    tensors = []

    def visit(x):
        if isinstance(x, ember.Tensor):
            tensors.append(x)
            return ("__tensor__", len(tensors) - 1)
        if isinstance(x, list | tuple):
            return type(x)(visit(a) for a in x)
        return x

    return tensors, visit(tuple(args)), {k: visit(v) for k, v in kwargs.items()}


def _rebuild(spec, tensors):
    if isinstance(spec, tuple) and len(spec) == 2 and spec[0] == "__tensor__":
        return tensors[spec[1]]
    if isinstance(spec, list | tuple):
        return type(spec)(_rebuild(a, tensors) for a in spec)
    return spec


def _clone(t):
    """A copy of ``t``'s values with its lazy bits (a conjugated sample stays a conjugated
    view, of fresh memory)."""
    if not isinstance(t, ember.Tensor):
        return t
    conj, neg = lazy_bits(t)
    if conj:
        t = t.conj()
    if neg:
        t = ember._neg_view(t)
    c = t.clone()
    if neg:
        c = ember._neg_view(c)
    return c.conj() if conj else c


def _compare(got, want, tol):
    if isinstance(want, ember.Tensor):
        assert isinstance(got, ember.Tensor)
        assert got.shape == want.shape and got.dtype is want.dtype
        assert lazy_bits(got) == lazy_bits(want)
        rtol, atol = tol if tol else (None, None)
        assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
    elif isinstance(want, list | tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, tol)
    # other values were computed by Python at trace time (make_fx bakes them in)


def _skip_untraceable(info):
    if any(w in info.name for w in SKIP_WORDS):
        pytest.skip("random or uninitialised values")
    if info.name.removesuffix("_grad") in NOT_TRACEABLE or info.name.startswith(NOT_TRACEABLE[:3]):
        pytest.skip("not traceable by a dispatch mode")


@pytest.mark.parametrize("info", INFOS, ids=[i.name for i in INFOS])
def test_numpy_backend_equals_eager(info):
    _skip_untraceable(info)
    dtypes = [d for d in ("float32", "float64", "int64", "bool", "float16") if d in info.dtypes]
    _check_samples(info, dtypes[:3], "numpy", 3)


COMPLEX_INFOS = [i for i in INFOS if set(i.dtypes) & {"complex64", "complex128"}]


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.skipif(
    cc.compiler() is None, reason="no C compiler"))])
@pytest.mark.parametrize("info", COMPLEX_INFOS, ids=[i.name for i in COMPLEX_INFOS])
def test_backends_equal_eager_complex(info, backend):
    """The complex samples (hostile layouts and conjugated views) of entries that list complex
    dtypes, on the NumPy backend and on the C backend (complex nodes run as ember ops in the
    compiled function; real nodes around them may be rendered or fused)."""
    _skip_untraceable(info)
    dtypes = [d for d in ("complex64", "complex128") if d in info.dtypes]
    _check_samples(info, dtypes, backend, 6, check_errors=True)


def _check_samples(info, dtypes, backend, per_dtype, check_errors=False):
    """Each traceable sample of ``info`` compiled with ``backend`` equals eager ember.

    ``check_errors``: a sample eager refuses (torch refuses many ops on complex inputs) must
    raise the same exception type through ``ember.compile`` (the op's meta kernel refuses it,
    the capture breaks the graph there and the op raises when it runs).
    """
    checked, untraced, refused = 0, [], 0
    for dtype in dtypes:
        for sample in list(info.samples(dtype))[:per_dtype]:
            tensors, aspec, kspec = _flatten(sample.args, sample.kwargs)
            if not tensors:
                continue

            def fn(*ts, aspec=aspec, kspec=kspec):
                return info.fn(ember, *_rebuild(aspec, ts), **_rebuild(kspec, ts))

            eager_in = [_clone(t) for t in tensors]
            try:
                want = fn(*eager_in)
            except Exception as e:  # noqa: BLE001 - error samples are the op table's business
                if check_errors:
                    with pytest.raises(type(e)):
                        ember.compile(fn, backend=backend)(*[_clone(t) for t in tensors])
                    refused += 1
                continue
            try:
                gm = make_fx(fn)(*tensors)
            except (MetaUnsupported, RuntimeError, NotImplementedError, TypeError) as e:
                untraced.append(f"{type(e).__name__}: {e}")
                continue
            compiled = compile_graph(gm.graph, tensors, backend)
            comp_in = [_clone(t) for t in tensors]
            got = compiled(*comp_in)
            tol = info.tol.get(dtype) if info.tol else None
            _compare(got, want, tol)
            for a, b in zip(comp_in, eager_in):
                _compare(a, b, tol)
            checked += 1
    if not checked and refused and not untraced:
        return      # eager refuses every sample (an error entry); compiled code raised alike
    if not checked:
        pytest.skip("no sample traceable without data" +
                    (f" ({untraced[0][:200]})" if untraced else ""))
