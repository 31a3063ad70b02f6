"""Capture, guards, recompiles and graph breaks: the cases of compiler-design.md section 12
(1-11, 13-29, 41, 42) with the graph/break/recompile counts from ``explain`` and a counting
backend, every result compared with eager ember. Runs on every supported Python version (no
torch here)."""

from __future__ import annotations

import sys
import threading
import traceback
import zlib

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import GraphBreakError, explain
from ember.compiler.config import config


class CompileCounter:
    """A backend that counts the graphs it is given and runs them eagerly."""

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += gm.graph.op_count()
        return gm


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        return
    assert a == b


def _x(*shape, seed=0):
    g = np.random.default_rng(seed)
    return ember.tensor(g.standard_normal(shape).astype(np.float32))


# ---- case 1, 42, 2 ------------------------------------------------------------------------

def test_case1_pointwise_chain():
    def f(x, y):
        return (x + y).relu() * 2

    x, y = _x(4), _x(4, seed=1)
    out = explain(f)(x, y)
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 3)
    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    _close(cf(x, y), f(x, y))
    _close(cf(x, y), f(x, y))
    assert cnt.frame_count == 1


def _print_fn(x):
    y = x * 2
    print("hi")
    return y + 1


def test_case2_print_breaks(capsys):
    x = _x(3)
    out = explain(_print_fn)(x)
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    br = out.break_reasons[0]
    assert "print" in br.reason
    frame = br.user_stack[-1]
    assert frame.lineno == _print_fn.__code__.co_firstlineno + 2
    assert 'print("hi")' in frame.line
    cf = ember.compile(_print_fn, backend="eager")
    _close(cf(x), _print_fn(x))
    assert capsys.readouterr().out.count("hi") == 3


def test_case42_fullgraph_names_print_and_line():
    cf = ember.compile(_print_fn, fullgraph=True, backend="eager")
    with pytest.raises(GraphBreakError) as ei:
        cf(_x(3))
    msg = str(ei.value)
    assert "print" in msg and 'print("hi")' in msg
    assert str(_print_fn.__code__.co_firstlineno + 2) in msg


def test_break_hint_for_item():
    def f(x):
        s = x.sum().item()
        return x * s

    out = explain(f)(_x(3))
    assert out.graph_break_count == 1
    assert out.break_reasons[0].hint and "keep the value as a tensor" in \
        out.break_reasons[0].hint


# ---- case 3, 4, 5, 6 ----------------------------------------------------------------------

def test_case3_data_dependent_jump_compiles_each_branch_once():
    def f(x):
        y = x.sin()
        if y.sum() > 0:
            return y.cos()
        else:
            return -y

    pos = ember.tensor([0.5, 1.0, 1.5])
    neg = -pos
    out = explain(f)(pos)
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    assert "data-dependent" in out.break_reasons[0].reason
    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    _close(cf(pos), f(pos))
    assert cnt.frame_count == 2
    _close(cf(neg), f(neg))
    assert cnt.frame_count == 3          # only the other branch; the prefix is not recompiled
    _close(cf(pos), f(pos))
    _close(cf(neg), f(neg))
    assert cnt.frame_count == 3


def test_case4_item_break_results():
    def f(x):
        s = x.sum().item()
        return x * s

    out = explain(f)(_x(3))
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    cf = ember.compile(f, backend="eager")
    for seed in range(5):
        x = _x(3, seed=seed)
        _close(cf(x), f(x))


def test_case5_unknown_c_function():
    def f(x):
        y = x + 1
        z = zlib.crc32(b"a")
        return y * z

    out = explain(f)(_x(3))
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    assert "zlib.crc32" in out.break_reasons[0].reason
    _close(ember.compile(f, backend="eager")(_x(3)), f(_x(3)))


def test_case6_tensor_dict_key():
    def f(x):
        d = {}
        d[x] = 1
        return len(d), x + 1

    out = explain(f)(_x(3))
    assert out.graph_break_count == 1
    assert "dict key" in out.break_reasons[0].reason
    _close(ember.compile(f, backend="eager")(_x(3)), f(_x(3)))


# ---- case 7, 8 ----------------------------------------------------------------------------

def test_case7_lambda_inlined():
    def f(x):
        g = lambda t: t.exp()  # noqa: E731
        return g(x) + g(x * 2)

    out = explain(f)(_x(3))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 4)
    _close(ember.compile(f)(_x(3)), f(_x(3)))


def _g8(t):
    print(t.shape)
    return t + 1


def test_case8_break_inside_inlined_call():
    def f(x):
        return _g8(x) * 2

    out = explain(f)(_x(3))
    assert (out.graph_count, out.graph_break_count) == (2, 2)
    assert all("print" in b.reason for b in out.break_reasons)
    # the outer break is reported at the call of _g8, with the callee's line in the stack
    _close(ember.compile(f, backend="eager")(_x(3)), f(_x(3)))


# ---- case 9: modules, parameter swap, in-place update -------------------------------------

class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(ember.relu(self.l1(x)))


def test_case9_module_recompiles_on_param_swap_not_on_inplace_update():
    m = _MLP().eval()
    x = _x(2, 4)
    cnt = CompileCounter()
    cm = ember.compile(m, backend=cnt)
    with ember.no_grad():
        _close(cm(x), m(x))
        _close(cm(x), m(x))
        assert cnt.frame_count == 1
        m.l1.weight = nn.Parameter(_x(8, 4, seed=3))
        _close(cm(x), m(x))
        assert cnt.frame_count == 2
        for p in m.parameters():
            p.add_(0.5)
        _close(cm(x), m(x))
        assert cnt.frame_count == 2
    out = explain(m)(x)
    assert out.graph_break_count == 0 and out.graph_count == 1


# ---- case 10, 11 -----------------------------------------------------------------------------

def test_case10_static_shapes_and_recompile_limit():
    def f(x):
        return x + 1

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt, dynamic=False)
    for n in (3, 4, 5, 6):
        x = _x(n)
        _close(cf(x), f(x))
    assert cnt.frame_count == 4

    def g(x, k):
        return x + k

    cnt = CompileCounter()
    cg = ember.compile(g, backend=cnt, dynamic=False)
    x = _x(3)
    with pytest.warns(RuntimeWarning, match="recompile_limit"):
        for k in range(10):
            _close(cg(x, k), g(x, k))
    assert cnt.frame_count == config.recompile_limit
    for k in range(10):
        _close(cg(x, k), g(x, k))


def test_case11_grad_mode_guard():
    def f(x):
        return x * 2

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    x = _x(3)
    with ember.no_grad():
        _close(cf(x), f(x))
    _close(cf(x), f(x))
    assert cnt.frame_count == 2
    with ember.no_grad():
        cf(x)
    cf(x)
    assert cnt.frame_count == 2


# ---- case 13, 14, 15 -------------------------------------------------------------------------

def _make_scaler(k):
    def scale(x):
        return x * k
    return scale


def test_case13_closures_sharing_code():
    cnt = CompileCounter()
    s2, s3 = _make_scaler(2), _make_scaler(3)
    c2, c3 = ember.compile(s2, backend=cnt), ember.compile(s3, backend=cnt)
    x = _x(3)
    for _ in range(2):
        _close(c2(x), s2(x))
        _close(c3(x), s3(x))
    assert cnt.frame_count == 2


def test_case14_nonlocal_counter():
    count = 0

    def f(x):
        nonlocal count
        count += 1
        return x + count

    cf = ember.compile(f, backend="eager")
    x = _x(3)
    results = [cf(x) for _ in range(3)]
    assert count == 3
    for i, r in enumerate(results, 1):
        _close(r, x + i)


SCALE = 2.0


def _scale_global(x):
    return x * SCALE


def test_case15_global_guard_recompiles():
    global SCALE
    cnt = CompileCounter()
    cf = ember.compile(_scale_global, backend=cnt)
    x = _x(3)
    _close(cf(x), x * 2.0)
    SCALE = 5.0
    try:
        _close(cf(x), x * 5.0)
    finally:
        SCALE = 2.0
    assert cnt.frame_count == 2


# ---- case 16, 17 -------------------------------------------------------------------------------

def test_case16_append_to_input_list():
    def f(x, out):
        out.append(x * 2)
        return x

    out_list = []
    x = _x(3)
    res = explain(f)(x, [])
    assert (res.graph_count, res.graph_break_count) == (1, 0)
    r = ember.compile(f, backend="eager")(x, out_list)
    assert r is x
    assert len(out_list) == 1
    _close(out_list[0], x * 2)


GLOBAL_L: list = []


def _global_list_fn(x):
    GLOBAL_L.append(x + 1)
    print("b")
    GLOBAL_L.append(x + 2)


def test_case17_side_effects_across_break():
    GLOBAL_L.clear()
    x = _x(3)
    out = explain(_global_list_fn)(x)
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    GLOBAL_L.clear()
    ember.compile(_global_list_fn, backend="eager")(x)
    assert len(GLOBAL_L) == 2
    _close(GLOBAL_L[0], x + 1)
    _close(GLOBAL_L[1], x + 2)


# ---- case 18, 19, 20, 21, 22, 23 -------------------------------------------------------------

def test_case18_exception_handled_concretely():
    def f(x):
        try:
            y = x.no_such_method()
        except AttributeError:
            y = x
        return y + 1

    x = _x(3)
    out = explain(f)(x)
    assert out.graph_break_count == 1
    _close(ember.compile(f, backend="eager")(x), f(x))


def test_case19_no_grad_block():
    def f(x):
        with ember.no_grad():
            y = x * 2
        return y + x, y

    x = _x(3).requires_grad_()
    out = explain(f)(x)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    r, y = ember.compile(f, backend="eager")(x)
    assert not y.requires_grad and r.requires_grad
    r.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    f(x)[0].sum().backward()
    _close(g1, x.grad)


class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for i in range(4):
            x = x * i
        for layer in self.layers:
            x = layer(x)
        return x


def test_case20_loops_unrolled():
    m = _Stack().eval()
    x = _x(2, 4)
    with ember.no_grad():
        out = explain(m)(x)
        assert (out.graph_count, out.graph_break_count) == (1, 0)
        _close(ember.compile(m)(x), m(x))


def test_case21_break_in_loop_runs_frame_natively(capsys):
    def f(x):
        for i in range(3):
            x = x + 1
            print(i)
        return x

    x = _x(3)
    out = explain(f)(x)
    assert out.graph_count == 0
    assert out.native_frames and "loop" in out.native_frames[0][1]
    capsys.readouterr()
    _close(ember.compile(f, backend="eager")(x), x + 3)
    assert capsys.readouterr().out.split() == ["0", "1", "2"]


def test_case22_generator_runs_natively():
    def gen(x):
        yield x + 1
        yield x * 2

    x = _x(3)
    out = explain(gen)(x)
    assert out.native_frames and "generator" in out.native_frames[0][1]
    res = list(ember.compile(gen, backend="eager")(x))
    _close(res, list(gen(x)))


def test_case23_list_comprehension():
    def f(xs):
        return [t * 2 for t in xs]

    xs = [_x(3), _x(3, seed=1)]
    out = explain(f)(xs)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    _close(ember.compile(f)(xs), f(xs))


# ---- case 24, 25, 26, 27 ---------------------------------------------------------------------

def test_case24_star_args_structure_guards():
    def f(x, *args, scale=2.0, **kw):
        r = x * scale
        for a in args:
            r = r + a
        for k in kw:
            r = r + kw[k]
        return r

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    x = _x(3)
    _close(cf(x), f(x))
    _close(cf(x, x), f(x, x))
    _close(cf(x, x, b=x), f(x, x, b=x))
    assert cnt.frame_count == 3
    _close(cf(x, _x(3, seed=4)), f(x, _x(3, seed=4)))
    assert cnt.frame_count == 3


def test_case25_inplace_on_input():
    def f(x):
        x.add_(1)
        return x * 2

    x1, x2 = _x(3), _x(3)
    v = x1._version
    out = explain(f)(x1.clone())
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    r = ember.compile(f, backend="eager")(x1)
    _close(r, f(x2))
    _close(x1, x2)
    assert x1._version == v + 1


def test_case26_mutation_of_aliased_input():
    def f(a, b):
        a.mul_(2)
        return b + 1

    base1, base2 = _x(6), _x(6)
    r1 = ember.compile(f, backend="eager")(base1, base1[::2])
    r2 = f(base2, base2[::2])
    _close(r1, r2)
    _close(base1, base2)


def test_case27_view_outputs_alias_input():
    def f(x):
        return x.view(-1), x.t()

    x = _x(2, 3)
    a, b = ember.compile(f, backend="eager")(x)
    a[0] = 100.0
    assert float(x[0, 0]) == 100.0
    b[1, 0] = -7.0
    assert float(x[0, 1]) == -7.0


# ---- case 28, 29 --------------------------------------------------------------------------------

class _Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class _Child(_Base):
    @property
    def factor(self):
        return 3

    def forward(self, x):
        tag = f"{type(self).__name__}-{x.dim()}"
        y = super().forward(x)
        if isinstance(x, ember.Tensor) and hasattr(self.lin, "bias") and tag.startswith("_C"):
            y = y + self.lin.bias
        return y * self.factor


def test_case28_python_features_without_breaks():
    m = _Child().eval()
    x = _x(2, 3)
    with ember.no_grad():
        out = explain(m)(x)
        assert out.graph_break_count == 0 and out.graph_count == 1
        _close(ember.compile(m)(x), m(x))


@pytest.mark.parametrize("body", ["print", "tolist", "bool"])
def test_case29_one_break_each(body, capsys):
    def f_print(x):
        y = x + 1
        print(x)
        return y

    def f_tolist(x):
        return (x + 1).tolist()

    def f_bool(x):
        return bool((x > 0).all())

    f = {"print": f_print, "tolist": f_tolist, "bool": f_bool}[body]
    x = _x(3)
    out = explain(f)(x)
    assert out.graph_break_count == 1
    r = ember.compile(f, backend="eager")(x)
    _close(r, f(x))


def test_case29_len_and_shape_are_constants():
    def f(x):
        return x * (len(x) + x.shape[0] * 2)

    out = explain(f)(_x(3))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 1)


# ---- case 41 and errors -------------------------------------------------------------------------

def test_case41_threads_no_duplicate_compiles():
    def f(x, y):
        return (x * y).sin() + y

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    x, y = _x(8), _x(8, seed=1)
    want = f(x, y).numpy()
    errors = []

    def work():
        try:
            for _ in range(200):
                np.testing.assert_allclose(cf(x, y).numpy(), want, rtol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cnt.frame_count == 1


def _raises_user_error(x):
    y = x + 1
    raise ValueError(f"bad value {y.shape[0]}")


def test_user_exception_keeps_user_traceback_line():
    cf = ember.compile(_raises_user_error, backend="eager")
    with pytest.raises(ValueError, match="bad value 3") as ei:
        cf(_x(3))
    frames = traceback.extract_tb(ei.value.__traceback__)
    line = _raises_user_error.__code__.co_firstlineno + 2
    assert any(fr.lineno == line and fr.filename == __file__ for fr in frames)
    assert not any("ember/compiler/concrete" in fr.filename for fr in frames)


def _inner_raises(x):
    print("in inner")
    raise KeyError("inner")


def _outer_calls(x):
    y = x + 1
    return _inner_raises(y)


def test_exception_from_callee_propagates_with_both_user_lines(capsys):
    with pytest.raises(KeyError) as ei:
        ember.compile(_outer_calls, backend="eager")(_x(3))
    frames = [(fr.name, fr.lineno) for fr in traceback.extract_tb(ei.value.__traceback__)
              if fr.filename == __file__]
    outer = _outer_calls.__code__.co_firstlineno + 2
    inner = _inner_raises.__code__.co_firstlineno + 2
    assert ("_outer_calls", outer) in frames and ("_inner_raises", inner) in frames
    assert frames.index(("_outer_calls", outer)) < frames.index(("_inner_raises", inner))


def test_version_info_recorded():
    assert sys.version_info[:2] >= (3, 11)


# ---- side effects, module state, logging ----------------------------------------------------

class _CountingModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.last = None

    def forward(self, x):
        y = self.lin(x)
        self.last = y
        return y * 2


def test_module_attribute_write_is_replayed():
    m = _CountingModule().eval()
    x = _x(2, 3)
    with ember.no_grad():
        r = ember.compile(m, backend="eager")(x)
        _close(r, m.lin(x) * 2)
        _close(m.last, m.lin(x))


def test_train_eval_switch_reguards():
    m = _MLP()
    x = _x(2, 4)
    cnt = CompileCounter()
    cm = ember.compile(m, backend=cnt)
    with ember.no_grad():
        m.eval()
        cm(x)
        m.train()
        _close(cm(x), m(x))
        m.eval()
        cm(x)
    assert cnt.frame_count == 2


_TOTAL = 0
_STATE = {"n": 0}


def _global_writer(x):
    global _TOTAL
    _TOTAL = _TOTAL + 1
    _STATE["n"] += 1
    d = {"a": x}
    d["b"] = x * 2
    return d


def test_global_and_dict_side_effects():
    global _TOTAL
    _TOTAL = 0
    _STATE["n"] = 0
    cf = ember.compile(_global_writer, backend="eager")
    x = _x(3)
    for _ in range(3):
        d = cf(x)
    assert _TOTAL == 3 and _STATE["n"] == 3
    assert sorted(d) == ["a", "b"] and d["a"] is x
    _close(d["b"], x * 2)


def test_closure_write_across_break(capsys):
    hits = []
    total = 0

    def f(x):
        nonlocal total
        total += 1
        print("between")
        total += 10
        hits.append(total)
        return x + total

    cf = ember.compile(f, backend="eager")
    x = _x(3)
    _close(cf(x), x + 11)
    _close(cf(x), x + 22)
    assert hits == [11, 22] and total == 22


def test_native_frames_are_logged(capsys):
    from ember.compiler import set_logs

    def f(x):
        for i in range(2):
            print(i)
            x = x + i
        return x

    set_logs(graph_breaks=True)
    try:
        ember.compile(f, backend="eager")(_x(3))
    finally:
        set_logs()
    err = capsys.readouterr().err
    assert "runs natively" in err and "loop" in err


def test_try_finally_with_break_inside():
    def k(x, cfg):
        y = x * cfg["scale"]
        try:
            print("in try")
            y = y + 1
        finally:
            y = y * 2
        return y

    ck = ember.compile(k)
    x = _x(2, 3)
    for s in (3.0, 4.0):
        _close(ck(x, {"scale": s}), k(x, {"scale": s}))
    out = explain(k)(x, {"scale": 3.0})
    assert (out.graph_count, out.graph_break_count) == (2, 1)


def test_numpy_backend_inplace_bumps_version():
    def h(x):
        x.add_(1)
        return x * 2

    a, b = ember.zeros(3), ember.zeros(3)
    v = a._version
    _close(ember.compile(h)(a), h(b))
    _close(a, b)
    assert a._version == v + 1


def test_container_inputs_are_guarded_not_baked():
    def f(x, d, ws):
        return x * d[("a", 1)] + ws[1]

    cf = ember.compile(f, backend="eager")
    x = _x(3)
    for scale, seed in ((2.0, 1), (3.0, 2), (3.0, 3)):
        ws = [_x(3, seed=seed), _x(3, seed=seed + 10)]
        d = {("a", 1): scale}
        _close(cf(x, d, ws), f(x, d, ws))


def test_module_list_children_are_lifted_not_baked():
    m = _Stack().eval()
    x = _x(2, 4)
    cm = ember.compile(m, backend="eager")
    with ember.no_grad():
        cm(x)
        m.layers[1].weight.mul_(0.5)         # in place: no recompile, new values used
        _close(cm(x), m(x))
        m.layers[2].weight = nn.Parameter(_x(4, 4, seed=9))
        _close(cm(x), m(x))


def test_break_inside_no_grad_block_restores_grad_mode(capsys):
    def f(x):
        with ember.no_grad():
            y = x * 2
            print("inside")
            z = y + x
        return y, z, z * x

    x = _x(3)
    out = explain(f)(x)
    assert (out.graph_count, out.graph_break_count) == (2, 1) and not out.native_frames
    cf = ember.compile(f, backend="eager")
    for _ in range(2):
        _close(cf(x), f(x))
        assert ember.is_grad_enabled()


def test_set_grad_enabled_call_is_replayed():
    def g(x):
        ember.set_grad_enabled(False)
        return x * 2

    x = _x(3)
    try:
        _close(ember.compile(g, backend="eager")(x), x * 2)
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)


def test_forward_hooks_are_captured_and_guarded():
    lin = nn.Linear(3, 3)
    m = nn.Sequential(lin, nn.ReLU()).eval()
    x = _x(2, 3)
    cnt = CompileCounter()
    cm = ember.compile(m, backend=cnt)
    with ember.no_grad():
        _close(cm(x), m(x))
        _close(cm(x), m(x))
        assert cnt.frame_count == 1
        h1 = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = lin.register_forward_hook(lambda mod, args, out: out + 1)
        _close(cm(x), m(x))
        assert cnt.frame_count == 2
        out = explain(m)(x)
        assert (out.graph_count, out.graph_break_count) == (1, 0)
        h1.remove()
        h2.remove()
        _close(cm(x), m(x))


def test_optimizer_style_update_under_no_grad():
    m = nn.Linear(3, 3)
    m(_x(2, 3)).sum().backward()

    def sgd(params, lr):
        with ember.no_grad():
            for p in params:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)

    ps = list(m.parameters())
    want = [(p - 0.1 * p.grad).detach() for p in ps]
    out = explain(sgd)(ps, 0.0)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    ember.compile(sgd)(ps, 0.1)
    for p, w in zip(ps, want):
        _close(p.detach(), w)
        assert p.requires_grad and p.is_leaf


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_allow_in_graph_is_one_node(backend):
    from ember.compiler import allow_in_graph

    def fused(a, b):
        return (a * b).sin() + a

    allow_in_graph(fused)

    def f(x, y):
        return fused(x, y) * 2

    x, y = _x(3), _x(3, seed=1)
    out = explain(f)(x, y)
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 2)
    _close(ember.compile(f, backend=backend)(x, y), f(x, y))


def test_disabled_function_breaks_and_runs_eagerly():
    from ember.compiler import disable

    calls = []

    @disable
    def side(t):
        calls.append(1)
        return t + 1

    def f(x):
        return side(x * 2) * 3

    x = _x(3)
    out = explain(f)(x)
    assert out.graph_break_count == 1 and "disable" in out.break_reasons[0].reason
    _close(ember.compile(f, backend="eager")(x), f(x))


def test_later_segment_does_not_guard_dead_locals(capsys):
    def f(x, k):
        y = x * k
        print("hi")
        return y.relu()

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt)
    x = _x(3)
    _close(cf(x, 2), f(x, 2))
    assert cnt.frame_count == 2
    _close(cf(x, 3), f(x, 3))
    assert cnt.frame_count == 3        # only the segment that reads k is recompiled


def test_break_inside_no_grad_block_keeps_gradients_after_it(capsys):
    def f(x):
        with ember.no_grad():
            y = x * 2
            print("inside")
            z = y + x
        return y, z, z * x

    x = _x(3).requires_grad_()
    for backend in ("numpy", "eager"):
        got = ember.compile(f, backend=backend)(x)
        want = f(x)
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
        got[2].sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        want[2].sum().backward()
        _close(g1, x.grad)
        x.grad = None
