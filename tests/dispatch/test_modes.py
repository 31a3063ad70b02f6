"""Python dispatch modes: nesting order, replacing results, composites, exit order, threads."""

from __future__ import annotations

import threading

import pytest

import ember
from ember.dispatch import DispatchKey, DispatchMode
from ember.dispatch.dispatcher import dispatch_state, included_keys
from ember.dispatch.modes import current_modes
from tests.dispatch import fresh_lib, unary


class Recorder(DispatchMode):
    """Appends ``(label, op short name)`` to a shared log, then runs the op."""

    def __init__(self, label: str, log: list):
        self.label, self.log = label, log

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((self.label, func.short_name))
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def _no_leaked_modes():
    yield
    assert current_modes() == ()
    assert not included_keys() & DispatchKey.Python.bit


def test_mode_sees_op_and_types():
    seen = []

    class Spy(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func.qualname, types))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2)
    with Spy() as m:
        assert isinstance(m, Spy)
        y = x + x
    assert seen == [("aten::add.Tensor", (ember.Tensor,))]
    assert y.tolist() == [2.0, 2.0]


def test_nested_modes_innermost_first_and_func_reaches_outer():
    log = []
    x = ember.ones(2)
    with Recorder("outer", log), Recorder("inner", log):
        x.mul(3)
    assert log == [("inner", "mul.Tensor"), ("outer", "mul.Tensor")]


def test_mode_active_inside_mode_is_the_outer_one():
    stacks = []

    class Peek(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            stacks.append(current_modes())
            return func(*args, **(kwargs or {}))

    outer, inner = Peek(), Peek()
    x = ember.ones(1)
    with outer, inner:
        x.neg()
    # while the inner mode runs it is popped; then the outer one runs with an empty stack
    assert stacks == [(outer,), ()]


def test_mode_can_replace_result():
    class Sevens(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            if func.name == "add":
                return ember.full((3,), 7.0)
            return func(*args, **(kwargs or {}))

    x = ember.ones(3)
    with Sevens():
        y = x + x
        z = x * 2
    assert y.tolist() == [7.0, 7.0, 7.0]
    assert z.tolist() == [2.0, 2.0, 2.0]
    assert (x + x).tolist() == [2.0, 2.0, 2.0]


def test_mode_calls_inside_handler_skip_the_handling_mode():
    log = []

    class Doubler(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(func.short_name)
            out = func(*args, **(kwargs or {}))
            return out * 2 if func.name == "neg" else out

    with Doubler():
        y = ember.ones(2).neg()
    assert y.tolist() == [-2.0, -2.0]
    assert log == ["ones.default", "neg.default"]  # the handler's own mul is not re-entered


def _composite_log(requires_grad: bool) -> tuple[list, list]:
    log = []
    with fresh_lib() as lib:
        op = unary(lib)
        lib.impl("op", lambda x: x * 2 + 1)  # CompositeImplicitAutograd
        x = ember.ones(2, requires_grad=requires_grad)
        with Recorder("m", log):
            y = op(x)
    return [name for _, name in log], y.tolist()


def test_mode_sees_ops_inside_composites():
    names, values = _composite_log(requires_grad=True)
    assert names == ["mul.Tensor", "add.Tensor"]  # decomposed above the Python key, as in torch
    assert values == [3.0, 3.0]


def test_mode_sees_ops_inside_composites_without_autograd_key():
    names, values = _composite_log(requires_grad=False)
    assert names == ["mul.Tensor", "add.Tensor"]


def test_exit_out_of_order_raises():
    a, b = DispatchMode(), DispatchMode()
    a.__enter__()
    b.__enter__()
    try:
        with pytest.raises(RuntimeError, match="reverse order"):
            a.__exit__(None, None, None)
        assert current_modes() == (a, b)
    finally:
        b.__exit__(None, None, None)
        a.__exit__(None, None, None)


def test_python_key_included_only_while_a_mode_is_active():
    st = dispatch_state()
    assert not st.included & DispatchKey.Python.bit
    with DispatchMode():
        assert st.included & DispatchKey.Python.bit
        with DispatchMode():
            assert st.included & DispatchKey.Python.bit
        assert st.included & DispatchKey.Python.bit
    assert not st.included & DispatchKey.Python.bit


def test_modes_are_thread_local():
    log, other = [], {}

    def worker():
        other["modes"] = current_modes()
        other["sum"] = (ember.ones(2) + 1).tolist()

    with Recorder("main", log):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert other == {"modes": (), "sum": [2.0, 2.0]}
    assert log == []


def test_mode_sees_meta_calls():
    log = []
    with Recorder("m", log):
        y = ember.zeros(2, 3, device="meta") * 2
    assert log == [("m", "zeros.default"), ("m", "mul.Tensor")]
    assert y.device.type == "meta" and y.shape == (2, 3)
