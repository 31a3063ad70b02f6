"""The graph IR: construction with meta propagation, printing, DCE, CSE, lint, GraphModule."""

from __future__ import annotations

import operator

import pytest

import ember
from ember.compiler.graph import Graph, GraphModule
from ember.compiler.meta import MetaUnsupported
from ember.testing import assert_close


def _two_inputs():
    g = Graph()
    x = g.placeholder("x", ember.ones(3, 4))
    y = g.placeholder("y", ember.ones(4))
    return g, x, y


def test_call_propagates_meta_without_computing():
    g, x, y = _two_inputs()
    n = g.call("add.Tensor", (x, y))
    assert n.shape == (3, 4) and n.dtype is ember.float32 and n.stride() == (4, 1)
    assert n.val.device.type == "meta"
    m = g.call("sum.dim_IntList", (n, [0]))
    assert m.shape == (4,)
    assert x.users == [n] and n.users == [m]


def test_python_code_is_readable_python():
    g, x, y = _two_inputs()
    a = g.call("add.Tensor", (x, y))
    r = g.call("relu.default", (a,))
    g.output((r,))
    assert g.python_code() == (
        "def forward(x, y):\n"
        "    add = aten.add.Tensor(x, y)  # f32[3, 4]\n"
        "    relu = aten.relu.default(add)  # f32[3, 4]\n"
        "    return (relu,)\n")
    text = g.print_readable(print_output=False)
    assert text.startswith("# x: f32[3, 4]\n# y: f32[4]\n")
    assert g.code == g.python_code()


def test_print_tabular(capsys):
    g, x, y = _two_inputs()
    g.output((g.call("mul.Tensor", (x, 2.0)),))
    text = g.print_tabular()
    assert "placeholder" in text and "aten.mul.Tensor" in text
    assert capsys.readouterr().out.strip() == text.strip()


def test_node_names_never_shadow_generated_globals():
    g, x, _ = _two_inputs()
    mx = g.call("max.dim", (x, 1))
    a = g.call(operator.getitem, (mx, 0))
    b = g.call(operator.getitem, (mx, 1))
    g.output((a, b))
    assert "getitem" not in (a.name, b.name)
    out = GraphModule(g)(ember.arange(12.0).reshape(3, 4), ember.ones(4))
    assert_close(out[0], ember.tensor([3.0, 7.0, 11.0]))
    assert out[1].tolist() == [3, 3, 3]


def test_graph_module_equals_eager():
    g, x, y = _two_inputs()
    a = g.call("add.Tensor", (x, y))
    s = g.call("softmax.int", (a, -1))
    g.output((s, a))
    xv, yv = ember.randn(3, 4), ember.randn(4)
    got = GraphModule(g)(xv, yv)
    assert_close(got[0], (xv + yv).softmax(-1))
    assert_close(got[1], xv + yv)


def test_dce_removes_unused_pure_calls_keeps_impure():
    g, x, y = _two_inputs()
    used = g.call("add.Tensor", (x, y))
    g.call("exp.default", (x,))                     # dead, pure
    g.call("add_.Tensor", (g.call("clone.default", (x,)), 1))  # in-place: kept
    g.call("rand.default", ([2],))                  # random: kept
    g.output((used,))
    assert g.dce() == 1
    names = [n.target.name for n in g.calls()]
    assert "exp" not in names
    assert "add_" in names and "rand" in names and "clone" in names
    g.lint()


def test_cse_merges_identical_pure_calls():
    g, x, y = _two_inputs()
    a = g.call("add.Tensor", (x, y))
    b = g.call("add.Tensor", (x, y))
    c = g.call("mul.Tensor", (a, b))
    g.output((c,))
    assert g.cse() == 1
    assert c.args == (a, a)
    assert len(g.calls()) == 2
    g.lint()


def test_cse_keeps_random_inplace_and_grad_modes_apart():
    g, x, y = _two_inputs()
    r1 = g.call("rand_like.default", (x,))
    r2 = g.call("rand_like.default", (x,))
    with ember.no_grad():
        n1 = g.call("mul.Tensor", (x, 2.0))
    n2 = g.call("mul.Tensor", (x, 2.0))
    g.output((r1, r2, n1, n2))
    assert g.cse() == 0
    assert n1.meta["grad_mode"] is False and n2.meta["grad_mode"] is True


def test_requires_grad_follows_autograd_rule():
    g = Graph()
    w = g.placeholder("w", ember.ones(3, requires_grad=True))
    x = g.placeholder("x", ember.ones(3))
    assert g.call("mul.Tensor", (w, x)).requires_grad
    assert not g.call("mul.Tensor", (x, x)).requires_grad
    with ember.no_grad():
        assert not g.call("mul.Tensor", (w, x)).requires_grad


def test_data_dependent_op_raises_and_adds_nothing():
    g, x, _ = _two_inputs()
    before = len(g.nodes)
    with pytest.raises(MetaUnsupported, match="nonzero"):
        g.call("nonzero.default", (x,))
    assert len(g.nodes) == before


def test_shape_error_surfaces_as_meta_unsupported():
    g = Graph()
    x = g.placeholder("x", ember.ones(3))
    y = g.placeholder("y", ember.ones(4))
    with pytest.raises(MetaUnsupported, match="add"):
        g.call("add.Tensor", (x, y))


def test_constants_are_bound_in_generated_code():
    g = Graph()
    x = g.placeholder("x", ember.ones(2))
    c = g.constant(ember.tensor([10.0, 20.0]))
    g.output((g.call("add.Tensor", (x, c)),))
    assert_close(GraphModule(g)(ember.ones(2))[0], ember.tensor([11.0, 21.0]))


def test_python_callable_targets_and_list_args():
    def double(t):
        return t * 2

    g, x, _ = _two_inputs()
    d = g.call(double, (x,))
    cat = g.call("cat.default", ([x, d], 0))
    g.output((cat,))
    assert cat.shape == (6, 4)
    code = g.python_code()
    assert "double_1 = double(x)" in code and "aten.cat.default([x, double_1], 0)" in code
    out = GraphModule(g)(ember.ones(3, 4), ember.ones(4))[0]
    assert_close(out, ember.cat([ember.ones(3, 4), ember.full((3, 4), 2.0)]))


def test_lint_reports_violations():
    g, x, y = _two_inputs()
    a = g.call("add.Tensor", (x, y))
    g.output((a,))
    g.lint()
    g.nodes.reverse()
    with pytest.raises(RuntimeError, match="lint"):
        g.lint()


def test_no_nodes_after_output():
    g, x, _ = _two_inputs()
    g.output((x,))
    with pytest.raises(RuntimeError, match="after output"):
        g.call("neg.default", (x,))


def test_op_count_ignores_getitem():
    g, x, _ = _two_inputs()
    mx = g.call("max.dim", (x, 0))
    g.output((g.call(operator.getitem, (mx, 0)),))
    assert g.op_count() == 1


def test_replay_honours_each_nodes_grad_mode():
    g = Graph()
    w = g.placeholder("w", ember.ones(3, requires_grad=True))
    with ember.no_grad():
        a = g.call("mul.Tensor", (w, 2.0))
    b = g.call("mul.Tensor", (w, 3.0))
    g.output((a, b))
    assert "_gs.enabled = False" in GraphModule(g)._source
    wv = ember.ones(3, requires_grad=True)
    out_a, out_b = GraphModule(g)(wv)
    assert not out_a.requires_grad and out_b.requires_grad
    assert ember.is_grad_enabled()
