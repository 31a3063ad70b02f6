"""Dynamic shapes: after a size-caused recompile the size is a symbol; guards check
relations; other sizes reuse the entry (batch and sequence sweeps compile at most twice);
``dynamic=True/False`` and ``ember._dynamo.mark_dynamic`` as torch."""

from __future__ import annotations

import pytest

import ember
from ember.compiler import cc, shapes
from ember.examples.gpt import GPT, GPTConfig
from ember.testing import assert_close

BACKENDS = ["numpy"] + (["c"] if cc.compiler() is not None else [])


pytestmark = pytest.mark.usefixtures("isolated_kernel_cache")


def _compiles(compiled) -> int:
    return compiled._ember_ctx.compiles


def mlp_like(x, w):
    B, T = x.shape[0], x.shape[1]
    h = (x @ w).relu()
    return h.view(B * T, -1).softmax(-1).sum(0), B * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_sizes_compile_at_most_twice(backend):
    cf = ember.compile(mlp_like, backend=backend)
    w = ember.randn(4, 3)
    for b in (3, 5, 7, 9):
        x = ember.randn(b, 2, 4)
        got, n = cf(x, w)
        want, wn = mlp_like(x, w)
        assert n == wn and type(n) is int
        assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert _compiles(cf) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt_sequence_and_batch_sweeps(backend):
    ember.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=20, block_size=32, n_layer=2, n_head=2, n_embd=16)).eval()
    cm = ember.compile(m, backend=backend)
    with ember.no_grad():
        for T in (4, 6, 9, 13, 17):
            idx = ember.randint(0, 20, (2, T))
            assert_close(cm(idx)[0], m(idx)[0], rtol=1e-5, atol=1e-5)
        assert _compiles(cm) == 2
        cm2 = ember.compile(m, backend=backend)
        for B in (3, 5, 7, 9):
            idx = ember.randint(0, 20, (B, 8))
            assert_close(cm2(idx)[0], m(idx)[0], rtol=1e-5, atol=1e-5)
        assert _compiles(cm2) == 2


def test_dynamic_true_false_and_mark_dynamic():
    def f(x):
        return (x * 2).sum(-1) + x.shape[0]

    dyn = ember.compile(f, backend="numpy", dynamic=True)
    static = ember.compile(f, backend="numpy", dynamic=False)
    for n in (3, 4, 6):
        x = ember.randn(n, 5)
        assert_close(dyn(x), f(x))
        assert_close(static(x), f(x))
    assert _compiles(dyn) == 1
    assert _compiles(static) == 3

    marked = ember.compile(f, backend="numpy")
    for n in (3, 4, 6):
        x = ember.randn(n, 5)
        ember._dynamo.mark_dynamic(x, 0)
        assert_close(marked(x), f(x))
    assert _compiles(marked) == 1
    with pytest.raises(IndexError):
        ember._dynamo.mark_dynamic(ember.randn(2), 3)


def test_guards_check_relations_not_values():
    def f(x, y):
        if x.shape[0] > 4:           # a branch on a size: a guard on the relation
            return x + y
        return x - y

    cf = ember.compile(f, backend="numpy", dynamic=True)
    for n in (5, 6, 9):
        x, y = ember.randn(n, 3), ember.randn(n, 3)
        assert_close(cf(x, y), f(x, y))
    assert _compiles(cf) == 1
    x, y = ember.randn(3, 3), ember.randn(3, 3)
    assert_close(cf(x, y), f(x, y))          # the other branch: a new entry
    assert _compiles(cf) == 2
    x, y = ember.randn(2, 3), ember.randn(2, 3)
    assert_close(cf(x, y), f(x, y))          # same side of the relation: reused
    assert _compiles(cf) == 2
    # broadcasting between two symbolic sizes is guarded: a size 1 or a mismatch recompiles
    x, y = ember.randn(4, 3), ember.randn(1, 3)
    assert_close(cf(x, y), f(x, y))


def test_sizes_zero_and_one_specialise():
    def f(x):
        return x.sum(0) * x.shape[0]

    cf = ember.compile(f, backend="numpy", dynamic=True)
    for n in (4, 1, 0, 7):
        x = ember.randn(n, 3)
        assert_close(cf(x), f(x))


def test_recompile_reason_names_the_size_and_dims_become_symbols():
    from ember.compiler.explain import collecting

    def f(x):
        return x.exp().mean(-1)

    cf = ember.compile(f, backend="numpy")
    with collecting() as ev:
        for n in (2, 3, 4, 5):
            x = ember.randn(n, 6)
            assert_close(cf(x), f(x))
    assert len(ev.recompiles) == 1
    assert "size mismatch at index 0" in ev.recompiles[0][1]
    assert _compiles(cf) == 2


def test_symint_arithmetic_and_guards():
    env = shapes.ShapeEnv()
    s = env.symbol("L[0]", 0, 6)
    t = (s * 2 + 1) // 3 - s % 4
    assert int(t) == (6 * 2 + 1) // 3 - 6 % 4 and isinstance(t, shapes.SymInt)
    assert env.guards == []
    assert s > 1 and s != 1 and env.guards == []       # implied by sizes >= 2
    assert (s > 5) is True
    assert env.guards == ["s0 > 5"]
    assert float(s) == 6.0 and "s0 == 6" in env.guards
    assert env.holds([6]) and not env.holds([5])


def _sum_rows_range(x):
    out = x[0] * 0
    for i in range(x.shape[0]):
        out = out + x[i]
    return out


def _sum_rows_len(x):
    out = x[0] * 0
    for i in range(1, len(x), 2):
        out = out + x[i] * i
    return out


def _sum_rows_iter(x):
    out = x[0] * 0
    for r in x:
        out = out + r
    return out


@pytest.mark.parametrize("fn", [_sum_rows_range, _sum_rows_len, _sum_rows_iter])
def test_loop_over_a_dynamic_size_is_guarded(fn, capsys):
    """A loop unrolled over a dynamic size (``range(s)``, ``range(1, len(x), 2)``, iterating
    a tensor) specialises that size with a guard: another size recompiles (logged under
    EMBER_LOGS=dynamic) and every result equals eager, never a graph unrolled for another
    size."""
    from ember.compiler import logs

    cf = ember.compile(fn, dynamic=True, backend="numpy")
    before = logs.enabled_logs()
    logs.set_logs("dynamic")
    try:
        for n in (4, 6, 3, 6, 4):
            x = ember.randn(n, 3)
            assert_close(cf(x), fn(x), rtol=1e-6, atol=1e-6)
    finally:
        logs.set_logs(*before)
    assert _compiles(cf) == 3           # 4, 6 and 3; the repeats hit their entries
    assert "is unrolled: specialised" in capsys.readouterr().err
