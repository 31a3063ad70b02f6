"""explain() reports, events, logging switches and the public API's options and errors."""

from __future__ import annotations

import pytest

import ember
from ember.compiler import logs
from ember.compiler.exc import GraphBreakError, UserFrame
from ember.compiler.explain import (
    collecting,
    record_break,
    record_graph,
    record_native,
    record_recompile,
)
from ember.compiler.graph import Graph
from ember.compiler.guards import GuardBuilder
from ember.testing import assert_close


def _graph():
    g = Graph()
    x = g.placeholder("x", ember.ones(2))
    g.output((g.call("relu.default", (g.call("add.Tensor", (x, 1)),)),))
    return g


def test_collected_events_fill_torch_field_names():
    gb = GuardBuilder()
    gb.add_tensor_match("L[0]", ember.ones(2))
    with collecting() as out:
        record_graph(_graph(), gb.build(), where="f (m.py:1)", compile_time=0.25)
        record_break("call to builtin print", [(__file__, 3, "print(x)", "f")],
                     hint="remove the print")
        record_recompile("f (m.py:1) at offset 0", "TENSOR_MATCH L[0]: size mismatch")
        record_native("g (m.py:9)", "graph break in loop")
    assert out.graph_count == 1 and out.graph_break_count == 1 and out.op_count == 2
    assert out.ops_per_graph == [["add.Tensor", "relu.default"]]
    assert out.out_guards == out.guards == [["TENSOR_MATCH L[0]: Tensor float32[2] "
                                              "stride=(1,) requires_grad=False"]]
    br = out.break_reasons[0]
    assert br.reason == "call to builtin print"
    assert br.user_stack == [UserFrame(__file__, 3, "f", "print(x)")]
    assert out.compile_times["total"] == 0.25
    text = str(out)
    for piece in ("Graph Count: 1", "Graph Break Count: 1", "Op Count: 2", "Break Reason 1:",
                  "Reason: call to builtin print", "3 |     print(x)", "Hint: remove the print",
                  "Frames run natively:", "g (m.py:9): graph break in loop", "Recompiles:",
                  "aten.add.Tensor(x, 1)", "Guards of entry 1:", "Compile Times:"):
        assert piece in text, piece


def test_events_outside_explain_are_only_logged(capsys):
    logs.set_logs("graph_breaks", "graph_code", "guards")
    try:
        gb = GuardBuilder()
        gb.add_global_state()
        record_graph(_graph(), gb.build(), where="f")
        record_break("data-dependent jump on Tensor", [(__file__, 1, "if t.sum() > 0:", "f")])
    finally:
        logs.set_logs()
    err = capsys.readouterr().err
    assert "[ember.compiler.graph_code] graph of f (2 ops)" in err
    assert "[ember.compiler.guards] guards of f:\ndef guard(L, G):" in err
    assert "[ember.compiler.graph_breaks] Graph break: Reason: data-dependent jump" in err
    record_break("quiet")
    assert capsys.readouterr().err == ""


def test_set_logs_names_flags_and_errors():
    logs.set_logs(graph_breaks=True, recompiles=False)
    assert logs.enabled_logs() == ["graph_breaks"]
    logs.set_logs("recompiles", "output_code")
    assert logs.enabled_logs() == ["graph_code", "recompiles"]
    with pytest.raises(ValueError, match="unknown artifact"):
        logs.set_logs(graph_brakes=True)
    logs.set_logs()
    assert logs.enabled_logs() == []
    assert ember._logging.set_logs is logs.set_logs


def test_env_parsing(monkeypatch):
    monkeypatch.setenv("EMBER_LOGS", "+graph_breaks, recompiles")
    monkeypatch.setenv("TORCH_LOGS", "guards")
    try:
        logs._enabled.clear()
        logs._from_env()
        assert logs.enabled_logs() == ["graph_breaks", "guards", "recompiles"]
        with pytest.warns(UserWarning, match="unknown artifact 'nope'"):
            logs._parse("nope")
    finally:
        logs.set_logs()


def test_graph_break_error_message():
    err = GraphBreakError("call to builtin print", [("m.py", 14, "print('hi')", "f")],
                          hint="remove it")
    assert isinstance(err, RuntimeError)
    assert str(err) == ('graph break: call to builtin print\n  File "m.py", line 14, in f\n'
                        "    print('hi')\nhint: remove it")


# -- the public API ----------------------------------------------------------------------------
def test_compile_bad_input_and_options():
    with pytest.raises(TypeError, match="callable function or nn.Module is expected"):
        ember.compile(42)
    with pytest.raises(AssertionError):
        ember.compile(42)
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        ember.compile(lambda x: x, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(lambda x: x, mode="default", options={})
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        ember.compile(lambda x: x, backend="nope")
    with pytest.raises(TypeError, match="dynamic must be"):
        ember.compile(lambda x: x, dynamic="yes")
    with pytest.raises(TypeError, match="fullgraph must be a bool"):
        ember.compile(lambda x: x, fullgraph=1)


def test_compile_as_decorator_disable_and_spellings():
    @ember.compile(backend="eager")
    def f(x):
        return x * 2

    assert_close(f(ember.ones(2)), ember.full((2,), 2.0))

    def g(x):
        return x
    assert ember.compile(g, disable=True) is g
    assert ember.compile is ember.compiler.compile
    assert ember._dynamo.explain is ember.compiler.explain
    assert ember._dynamo.reset is ember.compiler.reset


def test_disable_and_allow_in_graph_markers():
    from ember.compiler.api import is_allowed_in_graph, is_disabled

    @ember.compiler.disable
    def plain(x):
        return x + 1

    assert is_disabled(plain) and plain(1) == 2

    def op(x):
        return x * 3
    assert ember.compiler.allow_in_graph(op) is op and is_allowed_in_graph(op)
    assert not is_allowed_in_graph(plain)


def test_compiled_function_equals_eager_and_explain_counts():
    def f(x, y):
        return (x + y).relu() * 2

    x, y = ember.randn(3), ember.randn(3)
    assert_close(ember.compile(f)(x, y), f(x, y))
    out = ember.compiler.explain(f)(x, y)
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 3)


def test_explain_reports_a_print_break_with_its_line():
    def g(x):
        y = x * 2
        print("hi")
        return y + 1

    out = ember.compiler.explain(g)(ember.ones(2))
    assert out.graph_break_count == 1 and out.graph_count == 2
    frame = out.break_reasons[0].user_stack[-1]
    assert "print" in out.break_reasons[0].reason and 'print("hi")' in frame.line


def test_compiled_module_and_module_compile_follow_train_eval():
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Dropout(0.5))
    x = ember.randn(2, 4)
    om = ember.compile(m)
    m.eval()
    with ember.no_grad():
        assert_close(om(x), m(x))
        assert om.training is False and om._orig_mod is m
        m.train()
        out = om(x)  # dropout active again: about half the entries zeroed
        assert (out == 0).sum().item() > 0
        m2 = ember.nn.Linear(4, 3)
        m2.compile()
        assert_close(m2(x), x @ m2.weight.t() + m2.bias)
        assert m2._compiled_forward._ember_ctx.entry_count() == 1


def test_reset_clears_every_context():
    f = ember.compile(lambda x: x + 1)
    f(ember.ones(2))
    ember.compiler.reset()
    assert f._ember_ctx.entry_count() == 0


def test_recompiles_are_logged_and_the_limit_falls_back_to_eager(capsys):
    def f(x, k):
        return x + k

    c = ember.compile(f, dynamic=False)
    ember.compiler.set_logs(recompiles=True)
    try:
        with ember.compiler.config.patch(recompile_limit=3):
            with pytest.warns(RuntimeWarning, match=r"recompile_limit \(3\)"):
                for k in range(6):
                    assert c(ember.ones(2), k).tolist() == [1.0 + k] * 2
    finally:
        ember.compiler.set_logs()
    err = capsys.readouterr().err
    assert "EQUALS L[1]: expected 0 (int), actual 1 (int)" in err
    assert c._ember_ctx.compiles == 3


def test_compiled_module_regards_parameter_swap():
    m = ember.nn.Linear(2, 2)
    om = ember.compile(m)
    x = ember.ones(2)
    with ember.no_grad():
        om(x)
        m.weight = ember.nn.Parameter(ember.zeros(2, 2))
        assert_close(om(x), m.bias.detach())
        m.weight.add_(1)  # in place: same entry, new values
        assert_close(om(x), m.bias.detach() + 2)
    assert om._ember_ctx.recompiles == 1
