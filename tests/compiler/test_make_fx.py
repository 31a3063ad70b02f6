"""make_fx: tracing functions without Python control flow through the recording mode."""

from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F
from ember.compiler import make_fx
from ember.compiler.meta import MetaUnsupported
from ember.testing import assert_close


def _check(fn, *args):
    gm = make_fx(fn)(*args)
    gm.graph.lint()
    got, want = gm(*args), fn(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_close(g, w)
    else:
        assert_close(got, want)
    return gm


def test_pointwise_chain_records_each_op():
    gm = _check(lambda x, y: ((x + y).relu() * 2).exp(), ember.randn(3, 4), ember.randn(3, 4))
    assert [n.target.name for n in gm.graph.calls()] == ["add", "relu", "mul", "exp"]
    assert [p.name for p in gm.graph.placeholders()] == ["x", "y"]


def test_inputs_are_not_computed_on():
    x = ember.randn(3)
    v = x._version
    make_fx(lambda t: t.add_(1))(x)
    assert x._version == v
    assert x.tolist() == x.tolist()


def test_composites_reach_the_graph_decomposed_or_whole():
    gm = _check(lambda x, w: F.softmax(x @ w, -1).sum(0), ember.randn(4, 5), ember.randn(5, 3))
    assert gm.graph.op_count() >= 3


def test_views_and_multi_output_ops():
    def f(x):
        a, b = x.split(2, dim=1)
        return a.t() + b.t(), x.max(1).values
    _check(f, ember.randn(3, 4))


def test_factories_inside_record_the_real_device():
    def f(x):
        return x + ember.ones(x.shape[-1]) + ember.arange(x.shape[-1], device=x.device)
    gm = _check(f, ember.randn(2, 3))
    assert "meta" not in gm.graph.python_code()


def test_captured_tensors_become_constants():
    w = ember.randn(3, 3)
    gm = _check(lambda x: x @ w, ember.randn(2, 3))
    assert len(gm.graph.constants) == 1


def test_non_tensor_arguments_are_baked_in():
    gm = make_fx(lambda x, k: x * k)(ember.ones(2), 3.0)
    assert [p.name for p in gm.graph.placeholders()] == ["x"]
    assert_close(gm(ember.ones(2)), ember.full((2,), 3.0))


def test_module_forward_with_parameters():
    m = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    with ember.no_grad():
        _check(lambda x: m(x), ember.randn(5, 4))


def test_reading_data_is_refused():
    with pytest.raises(RuntimeError, match="meta"):
        make_fx(lambda x: x * x.sum().item())(ember.ones(3))
    with pytest.raises(MetaUnsupported, match="nonzero"):
        make_fx(lambda x: x.nonzero())(ember.ones(3))


def test_returns_an_input_unchanged():
    gm = make_fx(lambda x, y: (x, x + y))(ember.ones(2), ember.ones(2))
    x = ember.randn(2)
    out = gm(x, ember.ones(2))
    assert out[0] is x
