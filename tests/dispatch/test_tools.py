"""ember.utils.dispatch: trace() output and events, dispatch_table() rows."""

from __future__ import annotations

import io

import pytest

import ember
from ember.dispatch import DispatchKey, ExcludeKeys, Operator, redispatch
from ember.utils.dispatch import TensorInfo, dispatch_table, key_path, trace
from tests.dispatch import fresh_lib, unary

K = DispatchKey


def _lines(fn) -> list[str]:
    buf = io.StringIO()
    with trace(file=buf):
        fn()
    return buf.getvalue().splitlines()


# -- trace ------------------------------------------------------------------------------------
def test_trace_output_format_cpu():
    x = ember.ones(2, 3)
    assert _lines(lambda: ember.ones(2) + 1) == ["ones.default  BackendSelect -> CPU",
                                                 "add.Tensor  CPU"]
    assert _lines(lambda: x.t()) == ["t.default  CPU"]


def test_trace_output_format_meta():
    assert _lines(lambda: ember.zeros(2, device="meta") * 2) == [
        "zeros.default  BackendSelect -> Meta", "mul.Tensor  Meta"]


def test_trace_prints_to_stdout_by_default(capsys):
    x = ember.ones(2)
    with trace():
        x.neg()
    assert capsys.readouterr().out == "neg.default  CPU\n"


def test_trace_print_false_records_silently(capsys):
    x = ember.ones(2, 3, dtype=ember.float64)
    with trace(print=False) as t:
        x.sum(0, keepdim=True)
    assert capsys.readouterr().out == ""
    (event,) = t.events
    assert isinstance(event.op, Operator) and event.op.name == "sum"
    assert event.path == ("CPU",)
    assert event.args[0] == TensorInfo((2, 3), "ember.float64", "cpu")
    assert event.args[1:] == (0,) or event.args[1:] == ((0,),)
    assert event.kwargs == {"keepdim": True}
    assert str(event) == f"{event.name}  CPU"


def test_trace_events_hold_shapes_not_tensors():
    a, b = ember.ones(4, 1), ember.ones(1, 5, dtype=ember.int64)
    with trace(print=False) as t:
        a + b
    (event,) = t.events
    assert event.args == (TensorInfo((4, 1), "ember.float32", "cpu"),
                          TensorInfo((1, 5), "ember.int64", "cpu"))
    assert str(event.args[0]) == "float32[4, 1]"


def test_trace_shows_ops_inside_user_composite():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: (x * 2).neg())  # CompositeImplicitAutograd
        x = ember.ones(2, requires_grad=True)
        lines = _lines(lambda: op(x))
    assert [ln.split()[0] for ln in lines] == ["mul.Tensor", "neg.default"]


def test_trace_shows_an_autograd_kernel_registered_later():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        plain, x = ember.ones(2), ember.ones(2, requires_grad=True)
        assert _lines(lambda: op(plain)) == [f"{lib.ns}::op.default  CPU"]
        lib.impl("op", lambda op_, ks, x: redispatch(op_, ks, x), "Autograd", with_keyset=True)
        assert _lines(lambda: op(plain)) == [f"{lib.ns}::op.default  CPU"]  # no Autograd key
        assert _lines(lambda: op(x)) == [f"{lib.ns}::op.default  AutogradCPU -> CPU"]
        lib.impl("op", lambda op_, ks, x: redispatch(op_, ks, x), "ADInplaceOrView",
                 with_keyset=True)
        assert _lines(lambda: op(x)) == [
            f"{lib.ns}::op.default  AutogradCPU -> ADInplaceOrView -> CPU"]
        # the key set is the one in force when the trace was entered
        with ExcludeKeys(K.AutogradCPU.bit):
            assert _lines(lambda: op(x)) == [f"{lib.ns}::op.default  ADInplaceOrView -> CPU"]


def test_trace_records_missing_backend_and_restores_modes():
    from ember.dispatch.modes import current_modes

    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "Meta")
        with trace(print=False) as t, pytest.raises(NotImplementedError):
            op(ember.ones(1))
        assert t.events[-1].path == ("CPU (missing)",)
    assert current_modes() == ()


def test_trace_nested_inside_another_trace():
    outer_buf, inner_buf = io.StringIO(), io.StringIO()
    x = ember.ones(2)
    with trace(file=outer_buf), trace(file=inner_buf):
        x.exp()
    assert inner_buf.getvalue() == outer_buf.getvalue() == "exp.default  CPU\n"


def test_key_path_walks_from_high_to_low():
    add = ember.ops.aten.add.Tensor
    grad_keys = ember.ones(1, requires_grad=True)._keys
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        lib.impl("op", lambda x: x, "Meta")
        lib.impl("op", lambda x: x, "AutogradCPU")
        assert key_path(op, grad_keys) == ("AutogradCPU", "CPU")
        assert key_path(op, grad_keys | K.Meta.bit | K.Python.bit) == ("AutogradCPU", "Meta")
    assert key_path(add, K.Meta.bit | K.CPU.bit) == ("Meta",)
    zeros = ember.ops.aten.zeros.default
    assert key_path(zeros, K.BackendSelect.bit, {"device": "meta"}) == ("BackendSelect", "Meta")
    assert key_path(zeros, K.BackendSelect.bit, {}) == ("BackendSelect", "CPU")


# -- dispatch_table ---------------------------------------------------------------------------
def test_dispatch_table_has_one_row_per_runtime_key_highest_first():
    table = dispatch_table("add")
    assert [r.key for r in table.rows] == [k.name for k in sorted(K, reverse=True)]
    # ComplexHalf (ember's own, for complex32 tensors) sits above torch's keys
    assert table.rows[0].key == "ComplexHalf" and table.rows[1].key == "AutocastCUDA"
    assert table.rows[-1].key == "CPU"


def test_dispatch_table_rows_for_add():
    table = dispatch_table("aten::add.Tensor")
    assert table.op is ember.ops.aten.add.Tensor
    assert table["CPU"].why == "kernel"
    assert table["Meta"].why == "meta rule"  # the Meta fallback reads its shape rule
    assert table["CUDA"].why == "missing" and table["CUDA"].kernel == "-"
    assert table["BackendSelect"] == ("BackendSelect", "(backend fallback)", "fallthrough")
    assert table["Python"].why == "backend fallback"
    assert table["AutocastCPU"].why == "fallthrough"
    with pytest.raises(KeyError):
        table["Autograd"]


def test_dispatch_table_composites_and_factories():
    assert dispatch_table("zeros_like")["CPU"].why == "math kernel [CompositeImplicitAutograd]"
    assert dispatch_table("zeros_like")["AutogradCPU"].why == \
        "math kernel [CompositeImplicitAutograd]"
    assert dispatch_table("t")["CPU"].why == "default backend kernel [CompositeExplicitAutograd]"
    assert dispatch_table("ones")["BackendSelect"].why == "kernel"


def test_dispatch_table_user_op_and_accepted_forms():
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x, "CPU")
        lib.impl("op", lambda op_, ks, x: redispatch(op_, ks, x), "Autograd", with_keyset=True)
        lib.impl("op", lambda x: x, "CompositeExplicitAutograd")
        packet = getattr(ember.ops, lib.ns).op
        tables = [dispatch_table(x) for x in (op, packet, f"{lib.ns}::op", f"{lib.ns}::op.default")]
        assert all(t.rows == tables[0].rows for t in tables)
        t = tables[0]
        assert t["CPU"].why == "kernel" and t["CPU"].kernel.endswith("<lambda>")
        assert t["Meta"].why == "default backend kernel [CompositeExplicitAutograd]"
        assert t["AutogradCPU"].why == "autograd kernel"
        assert t["AutogradMeta"].why == "autograd kernel"
        text = str(t)
        assert text.splitlines()[0] == f"{lib.ns}::op"
        assert "CPU" in text.splitlines()[-1] and "kernel" in text.splitlines()[-1]
        assert repr(t) == text
    with pytest.raises(TypeError):
        dispatch_table(42)


def test_dispatch_table_reflects_registered_fallthrough():
    from ember.library import fallthrough_kernel

    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", fallthrough_kernel, "AutogradCPU")
        assert dispatch_table(op)["AutogradCPU"] == ("AutogradCPU", "(registered)", "fallthrough")
