"""The ``c`` backend: fused kernels equal the NumPy backend and eager ember; kernel counts;
the disk cache across processes; fallback without gcc; corrupt cache entries rebuilt."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember.compiler import cc, make_fx
from ember.compiler.backends import compile_graph
from ember.testing import assert_close

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs gcc")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    old = os.environ.get("EMBER_CACHE_DIR")
    path = str(tmp_path_factory.mktemp("ember_cache"))
    os.environ["EMBER_CACHE_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = old


def _compile(fn, *args, backend="c"):
    gm = make_fx(fn)(*args)
    return compile_graph(gm.graph, list(args), backend)


def _check(fn, *args, rtol=None, atol=None):
    """C backend == eager == NumPy backend; returns the compiled callable."""
    c = _compile(fn, *args)
    got = c(*args)
    want = fn(*args)
    ref = _compile(fn, *args, backend="numpy")(*args)
    if not isinstance(want, tuple):
        got, want, ref = (got,), (want,), (ref,)
    for g, w, r in zip(got, want, ref, strict=True):
        assert type(g) is ember.Tensor
        assert g.dtype is w.dtype and tuple(g.shape) == tuple(w.shape)
        assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
        assert_close(g, r, rtol=rtol, atol=atol, equal_nan=True)
    return c


def gelu_tanh(x):
    return 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)).tanh())


# -- kernel counts ------------------------------------------------------------------------------
def test_add_relu_mul_is_one_kernel():
    x, y = ember.randn(8, 16), ember.randn(8, 16)
    assert _check(lambda a, b: (a + b).relu() * 2, x, y).kernels == 1


def test_gelu_chain_is_one_kernel():
    x = ember.randn(64, 33)
    assert _check(gelu_tanh, x).kernels == 1
    assert _check(lambda a: F.gelu(a, approximate="tanh"), x).kernels == 1


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_softmax_layer_norm_at_most_two_kernels(dtype):
    x = ember.randn(6, 7, 19, dtype=dtype) * 3
    assert _check(lambda a: F.softmax(a, -1), x).kernels <= 2
    assert _check(lambda a: F.log_softmax(a, dim=-1), x).kernels <= 2
    w, b = ember.randn(19, dtype=dtype), ember.randn(19, dtype=dtype)
    assert _check(lambda a, w, b: F.layer_norm(a, (19,), w, b), x, w, b).kernels <= 2


def test_consecutive_kernels_run_in_one_foreign_call():
    x = ember.randn(6, 7, 19)
    w, b = ember.randn(19), ember.randn(19)
    c = _check(lambda a, w, b: (F.softmax(F.layer_norm(a, (19,), w, b).exp(), -1) * 3,
                                (w * b).tanh()), x, w, b, rtol=1e-5, atol=1e-6)
    assert c.kernels == 2 and c.calls == 1
    # a node left to NumPy (matmul) between kernels splits them into two calls
    m = ember.randn(19, 19)
    c = _check(lambda a, m: F.softmax(((a * 2).relu() @ m).tanh(), -1), x, m,
               rtol=1e-5, atol=1e-5)
    assert c.calls == 2


def test_kernels_take_sizes_as_arguments():
    """One library serves every size of a shape class: other sizes build nothing."""
    w, b = ember.randn(16), ember.randn(16)

    def f(a, w, b):
        return F.softmax(F.layer_norm((a * 2).relu(), (16,), w, b), -1).mean(-1)

    cf = ember.compile(f, backend="c", dynamic=True)
    cf(ember.randn(3, 16), w, b)
    before = dict(cc.stats)
    for n in (5, 7, 40):
        x = ember.randn(n, 16)
        assert_close(cf(x, w, b), f(x, w, b), rtol=1e-5, atol=1e-6)
    assert cc.stats["compiles"] == before["compiles"]
    # a new row length is the same kernel too (sizes, strides and 1/n are arguments)
    g = ember.compile(lambda a: (a.exp() * 2).mean(-1), backend="c", dynamic=True)
    g(ember.randn(4, 3))
    before = dict(cc.stats)
    for n in (5, 9, 31):
        x = ember.randn(4, n)
        assert_close(g(x), (x.exp() * 2).mean(-1), rtol=1e-5, atol=1e-6)
    assert cc.stats["compiles"] == before["compiles"]


def test_reductions_and_strided_inputs():
    x = ember.randn(5, 9, dtype=ember.float64)
    y = ember.randn(9, 5, dtype=ember.float64)
    c = _check(lambda a, b: ((a * 2).exp().sum(-1), a.amax(-1, keepdim=True), (a + b.t()).mean(-1),
                             a.amin(-1)), x, y)
    assert c.kernels >= 1
    # transposed, sliced and broadcast inputs read through strides
    _check(lambda a, b: (a.t()[1:] * 2).tanh() + b[1:, :1], x, y)
    _check(lambda a, b: F.softmax(a.t(), -1) * b, x, y)


def test_nan_inf_semantics():
    x = ember.tensor([[float("nan"), 1.0, -2.0, float("inf")], [0.5, float("-inf"), 3.0, 2.0]])
    y = ember.tensor([[0.0, float("nan"), 1.0, -1.0], [1.0, 2.0, float("nan"), 5.0]])
    _check(lambda a, b: (ember.maximum(a, b), ember.minimum(a, b), a.relu(), a.clamp(-1, 1)),
           x, y)
    _check(lambda a: (a.amax(-1), a.amin(-1), a.sum(-1), F.softmax(a, -1)), x)
    _check(lambda a, b: (ember.where(a > b, a, b), (a == b), a.sigmoid() / b), x, y)


def test_input_strides_differ_at_call_time():
    x = ember.randn(6, 6)
    c = _compile(lambda a: (a * 3).exp(), x)
    xt = ember.randn(6, 6).t()
    assert_close(c(xt)[0] if isinstance(c(xt), tuple) else c(xt), (xt * 3).exp())


def test_extern_matmul_between_kernels():
    x, w, b = ember.randn(4, 8), ember.randn(8, 5), ember.randn(5)
    c = _check(lambda a, w, b: F.softmax((a.relu() @ w + b).tanh(), -1), x, w, b,
               rtol=1e-5, atol=1e-6)
    assert c.kernels == 2


# -- differential, property-based ----------------------------------------------------------------
_UN = [lambda a: a.exp(), lambda a: a.tanh(), lambda a: a.sigmoid(), lambda a: a.relu(),
       lambda a: -a, lambda a: a.abs(), lambda a: (a.abs() + 1).log(), lambda a: a * a,
       lambda a: (a.abs() + 0.5).sqrt(), lambda a: F.gelu(a), lambda a: a.clamp(-0.5, 0.5)]
_BIN = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
        lambda a, b: a / (b.abs() + 1), lambda a, b: ember.maximum(a, b),
        lambda a, b: ember.minimum(a, b), lambda a, b: ember.where(a > b, a, b)]


@st.composite
def _program(draw):
    n = draw(st.integers(2, 6))
    steps = [(draw(st.booleans()), draw(st.integers(0, 50)), draw(st.integers(0, 50)))
             for _ in range(n)]
    return steps


def _scale(steps, x, y) -> float:
    """1 + the largest finite magnitude among the program's values (tolerances scale with it:
    libm and libmvec differ by an ulp or two, and cancellation turns that into absolute error)."""
    vals = [x, y]
    for binary, i, j in steps:
        if binary:
            vals.append(_BIN[i % len(_BIN)](vals[i % len(vals)], vals[j % len(vals)]))
        else:
            vals.append(_UN[i % len(_UN)](vals[j % len(vals)]))
    m = 0.0
    for v in vals:
        f = v[ember.isfinite(v)]
        if f.numel():
            m = max(m, f.abs().max().item())
    return 1.0 + m


def _run_program(steps, x, y):
    vals = [x, y]
    for binary, i, j in steps:
        if binary:
            vals.append(_BIN[i % len(_BIN)](vals[i % len(vals)], vals[j % len(vals)]))
        else:
            vals.append(_UN[i % len(_UN)](vals[j % len(vals)]))
    return vals[-1], vals[-2]


@settings(max_examples=12, deadline=None)
@given(steps=_program(), rows=st.integers(1, 5), cols=st.integers(1, 9),
       layout=st.sampled_from(["plain", "bcast", "transposed", "sliced"]),
       dtype=st.sampled_from(["float32", "float64"]), special=st.booleans())
def test_random_pointwise_programs(steps, rows, cols, layout, dtype, special):
    d = getattr(ember, dtype)
    x = ember.randn(rows, cols, dtype=d)
    if special:
        x[0, 0] = float("nan")
        x[-1, -1] = float("inf")
    if layout == "plain":
        y = ember.randn(rows, cols, dtype=d)
    elif layout == "bcast":
        y = ember.randn(cols, dtype=d)
    elif layout == "transposed":
        y = ember.randn(cols, rows, dtype=d).t()
    else:
        y = ember.randn(rows, cols * 2, dtype=d)[:, ::2]
    eps = 1.2e-7 if dtype == "float32" else 2.3e-16
    tol = 64 * len(steps) * eps * _scale(steps, x, y)
    _check(lambda a, b: _run_program(steps, a, b), x, y, rtol=tol, atol=tol)


# -- cache, fallback, corrupt entries (subprocesses) ----------------------------------------------
_SCRIPT = textwrap.dedent("""
    import math, warnings
    warnings.simplefilter("always")
    import ember
    from ember.compiler import cc, make_fx
    from ember.compiler.backends import compile_graph
    def f(x):
        return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x ** 3)).tanh()) + 1.25
    def g(x):
        return (x * 3).exp().sum(-1)
    x = ember.arange(12, dtype=ember.float32).reshape(3, 4) / 7
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = []
        for fn in (f, g):
            gm = make_fx(fn)(x)
            c = compile_graph(gm.graph, [x], "c")
            out = c(x)
            out = out[0] if isinstance(out, tuple) else out
            ember.testing.assert_close(out, fn(x))
    n = sum(issubclass(i.category, RuntimeWarning) and "NumPy backend" in str(i.message)
            for i in w)
    print("STATS", cc.stats["compiles"], cc.stats["disk_hits"], n)
""")


def _sub(cache, env_extra=None):
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache))
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True,
                       timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))))
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("STATS")][-1]
    return tuple(int(v) for v in line.split()[1:])


def test_second_process_hits_disk_cache_and_corrupt_entry_is_rebuilt(tmp_path):
    compiles, hits, warned = _sub(tmp_path)
    assert compiles == 2 and hits == 0 and warned == 0
    compiles, hits, warned = _sub(tmp_path)
    assert compiles == 0 and hits == 2 and warned == 0
    libs = sorted(str(p) for p in tmp_path.rglob("*.so"))
    assert len(libs) == 2
    with open(libs[0], "r+b") as f:       # truncate one entry
        f.truncate(100)
    compiles, hits, warned = _sub(tmp_path)
    assert compiles == 1 and hits == 1 and warned == 0


def test_no_gcc_falls_back_with_one_warning(tmp_path):
    compiles, hits, warned = _sub(tmp_path, {"PATH": "/nonexistent"})
    assert compiles == 0 and hits == 0 and warned == 1


def test_output_code_log(capsys):
    from ember.compiler import logs

    logs.set_logs("output_code")
    try:
        _compile(lambda a: (a + 1).relu(), ember.randn(3))
    finally:
        logs.set_logs()
    assert "void ember_k0(void** buf, const int64_t* sz)" in capsys.readouterr().err


def test_cache_dir_default(monkeypatch):
    monkeypatch.delenv("EMBER_CACHE_DIR", raising=False)
    assert cc.cache_dir().endswith(os.path.join(".cache", "ember"))
    assert np.isfinite(1.0)


def test_large_parallel_kernel_and_edge_shapes(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "2")
    x = ember.randn(1 << 20)            # OpenMP loop, output from the caching allocator
    c = _check(gelu_tanh, x, rtol=1e-5, atol=1e-6)
    assert c.kernels == 1
    _check(lambda a: F.softmax(a * 2, -1), ember.randn(2048, 512), rtol=1e-5, atol=1e-7)
    _check(lambda a: (a + 1).exp() * 2, ember.tensor(0.5))          # 0-d
    _check(lambda a: (a + 1).relu() * 2, ember.randn(0, 3))         # zero-size


def test_values_read_before_an_inplace_op_are_computed_before_it():
    def f(x):
        a = x * 2
        x.add_(1)
        return a + 1

    x = ember.randn(4, 3)
    c = _compile(f, x.clone())
    x1, x2 = x.clone(), x.clone()
    got = c(x1)
    got = got[0] if isinstance(got, tuple) else got
    assert_close(got, f(x2))
    assert_close(x1, x2)


def test_views_read_by_nodes_left_to_numpy():
    x, w = ember.randn(10, 8), ember.randn(8, 12)
    _check(lambda a, w: ((a @ w).view(5, 2, 12).select(0, 1).cumsum(0),
                         (a @ w).view(5, 2, 12)[2].exp() * 2), x, w, rtol=1e-5, atol=1e-5)


_IUN = [lambda a: -a, lambda a: a.abs(), lambda a: a.relu(), lambda a: a.clamp(-50, 70),
        lambda a: a * 3]
_IBIN = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
         lambda a, b: ember.maximum(a, b), lambda a, b: ember.minimum(a, b),
         lambda a, b: ember.where(a > b, a, b), lambda a, b: ember.where(a == b, a - 1, b + 2)]


@settings(max_examples=8, deadline=None)
@given(steps=_program(), cols=st.integers(1, 9), dtype=st.sampled_from(["int32", "int64"]),
       big=st.booleans())
def test_random_integer_programs(steps, cols, dtype, big):
    d = getattr(ember, dtype)
    hi = 2 ** 30 if big else 100          # big: products wrap around, as in eager
    x = ember.randint(-hi, hi, (3, cols), dtype=d)
    y = ember.randint(-hi, hi, (cols,), dtype=d)

    def f(a, b):
        vals = [a, b]
        for binary, i, j in steps:
            if binary:
                vals.append(_IBIN[i % len(_IBIN)](vals[i % len(vals)], vals[j % len(vals)]))
            else:
                vals.append(_IUN[i % len(_IUN)](vals[j % len(vals)]))
        return vals[-1], (vals[-1] > vals[-2]), vals[-1].float() * 0.5

    c = _check(f, x, y, rtol=0, atol=0)
    assert c.kernels >= 1


_RED = [lambda a: a.sum(-1), lambda a: a.mean(-1, keepdim=True) * a, lambda a: a.amax(-1),
        lambda a: a - a.amin(-1, keepdim=True), lambda a: F.softmax(a, -1),
        lambda a: F.log_softmax(a, -1), lambda a: F.layer_norm(a, (a.shape[-1],))]


@settings(max_examples=10, deadline=None)
@given(steps=_program(), red=st.integers(0, len(_RED) - 1), rows=st.integers(1, 4),
       cols=st.integers(1, 40), transposed=st.booleans())
def test_random_programs_into_reductions(steps, red, rows, cols, transposed):
    # float64: the C kernels and eager sum in different orders; the tolerance scales with the
    # largest value summed (cancellation), n * eps * max|x| with a wide margin.
    # y has x's shape: a costly value of a broadcast operand is realised by policy (computed
    # once per element of its own shape, test_random_programs covers it), and the kernel bound
    # here is about pointwise chains fusing into the reduction.
    d = ember.float64
    x = ember.randn(cols, rows, dtype=d).t() if transposed else ember.randn(rows, cols, dtype=d)
    y = ember.randn(rows, cols, dtype=d)
    inner = _run_program(steps, x, y)[0]
    finite = inner[ember.isfinite(inner)]
    scale = 1.0 + (finite.abs().max().item() if finite.numel() else 0.0)
    tol = 1e3 * cols * 2.2e-16 * scale
    c = _check(lambda a, b: _RED[red](_run_program(steps, a, b)[0]) * 2, x, y, rtol=tol,
               atol=tol)
    assert c.kernels <= 3


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_precision_kernels_round_like_eager(dtype):
    """Halves are stored in 16 bits and computed in float32, rounded at every graph node as
    eager rounds every op: fused chains, softmax and reductions equal eager up to one ulp of the
    half type (libm's and NumPy's transcendentals may round a float32 value differently)."""
    ulp = 2.0 ** -7 if dtype is ember.bfloat16 else 2.0 ** -10
    x = (ember.randn(6, 40) * 3).to(dtype)
    c = _check(gelu_tanh, x, rtol=ulp, atol=ulp)
    assert c.kernels == 1
    assert _check(lambda a: F.softmax(a, -1), x, rtol=ulp, atol=ulp / 64).kernels == 1
    c = _check(lambda a: (a.exp().sum(-1), a.amax(-1), a.mean(-1)), x, rtol=ulp, atol=ulp)
    assert c.kernels == 1
    _check(lambda a: ((a > 0).to(dtype) * a, a.float() * 2, (a.float() + 1).to(dtype)), x,
           rtol=0, atol=0)


def test_reductions_over_other_dims():
    """Reductions over leading, middle, several or all dimensions read the input through a
    view with the reduced dimensions last (a pointwise producer is realised first)."""
    x, y = ember.randn(6, 5, 7), ember.randn(7, 6)
    for f in (lambda a, b: a.sum(0), lambda a, b: a.mean((0, 1)), lambda a, b: a.amax(1),
              lambda a, b: (a * 2).exp().sum(0, keepdim=True), lambda a, b: (a + 1).sum(),
              lambda a, b: b.t().sum(0), lambda a, b: (a.relu() * 3).mean((0, 2)),
              lambda a, b: ((a * 2).sum(0), (a * 2).amin(), a * 2),
              lambda a, b: a.sum(dim=(0, 1), keepdim=True)):
        assert _check(f, x, y, rtol=1e-5, atol=1e-5).kernels >= 1


def test_dead_intermediates_share_a_workspace():
    """Intermediates read only inside one foreign call live in a per-thread workspace; one
    whose last reader ran lends its bytes to a later one (fewer buffers than intermediates),
    and repeated calls stay right."""
    x = ember.randn(6, 7)

    def f(a):
        b = (a * 2).exp()
        c = (b.sum(0) + 1).relu()           # b realised, read strided by a later kernel
        d = (a - 1).tanh()
        e = (d.amax(0) * c)                 # d realised likewise, after b is dead
        return e.sum(-1)

    c = _check(f, x, rtol=1e-5, atol=1e-5)
    internal, buffers = c.workspace
    assert internal >= 2 and buffers < internal
    for _ in range(3):
        y = ember.randn(6, 7)
        assert_close(c(y), f(y), rtol=1e-5, atol=1e-5)


def test_block_gradients_through_compiled_region_equal_eager(block_pair):
    """A transformer block trained through a compiled region: the forward's saved q/k/v are
    views of a large kernel output, which must keep its allocator block alive until the
    backward reads them."""
    from ember.examples.gpt import GPTConfig

    cfg = GPTConfig(vocab_size=10, block_size=64, n_layer=1, n_head=4, n_embd=128)
    m1, x1, m2, x2, go = block_pair(cfg, 16)
    (ember.compile(m2, backend="c")(x2) * go).sum().backward()
    # float32 sums of 1024 terms in another order: tolerance ~ n ulp of the magnitudes
    assert_close(x2.grad, x1.grad, rtol=1e-4, atol=1e-4)
    for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
        assert_close(q.grad, p.grad, rtol=1e-4, atol=5e-4)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_activation_gradients_are_kernels(dtype, approximate):
    """``gelu_backward`` and ``threshold_backward`` (ReLU's gradient) lower to fused kernels
    with their bias-gradient column sum: values equal eager's within the libm differences,
    NaN inputs pass the gradient (threshold) or propagate (gelu), masked gradients are 0."""
    from ember.ops.nn_ops import gelu_backward, threshold_backward

    g, x = ember.randn(64, 96, dtype=dtype), 3 * ember.randn(64, 96, dtype=dtype)
    x[0, 0], x[1, 1], g[2, 2], x[3, 3] = float("nan"), 0.0, float("inf"), -20.0
    xt = ember.randn(96, 64, dtype=dtype).t()       # strided input

    def f(a, b, bt):
        gb = gelu_backward(a, b, approximate=approximate)
        tb = threshold_backward(a, bt, 0.25)
        return gb, gb[4:].sum(0), tb, tb.sum(0)

    eps = 1e-6 if dtype is ember.float32 else 1e-14
    c = _check(f, g, x, xt, rtol=8 * eps, atol=8 * eps * 64)
    assert c.fallbacks == []
    assert c.kernels <= 4


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_column_reductions(dtype):
    """Sums over leading dimensions of row-major inputs (bias gradients) run column-tiled
    (the reduced index outside, adjacent outputs inside); tiles that do not divide the
    columns, a mean's scale, broadcast and sliced inputs, and several outputs at once."""
    a = ember.randn(300, 515, dtype=dtype)
    b = ember.randn(8, 33, 300, dtype=dtype)
    for f in (lambda x, y: x.sum(0), lambda x, y: (x * 2).mean(0, keepdim=True),
              lambda x, y: y.sum((0, 1)), lambda x, y: (y.mean((0, 1)), y.sum(1)),
              lambda x, y: x[::3, 7:].sum(0), lambda x, y: x.t().sum(1),
              lambda x, y: (x + y[0, 0, :1]).sum(0)):
        c = _check(f, a, b, rtol=300 * 1e-7, atol=300 * 1e-7)
        assert c.kernels >= 1
        assert "c0" in c.c_source        # the column-tiled loop
    # the rows of a column sum add in order: float64 equals a sequential sum exactly
    if dtype is ember.float64:
        c = _compile(lambda x, y: x.sum(0), a, b)
        want = np.zeros(515)
        for row in a.numpy():
            want += row
        out = c(a, b)
        out = out[0] if isinstance(out, tuple) else out
        assert (out.numpy() == want).all()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_masked_softmax_clamps_the_exp_argument(dtype):
    """A softmax over a ``where(mask, x, -inf)`` stores the clamped ``x - max`` and takes the
    exp of that (libmvec's fast path); masked lanes give exactly 0, a fully masked row NaN,
    results within a few ulp of eager (subnormal probabilities may flush to 0)."""
    x = 30 * ember.randn(6, 5, 40, dtype=dtype)
    x[0, 0, 3] = -100.0                       # exp underflows to a subnormal / 0
    mask = ember.rand(6, 5, 40) > 0.4
    mask[1, 2] = False                        # a fully masked row

    def f(a, m):
        p = ember.where(m, a, float("-inf")).softmax(-1)
        return p, p.sum(-1)

    eps = 1e-7 if dtype is ember.float32 else 1e-15
    c = _check(f, x, mask, rtol=16 * eps, atol=16 * eps)
    got = c(x, mask)[0]
    assert (got.numpy()[~mask.numpy()] == 0).sum() + 40 >= (~mask.numpy()).sum()
    assert bool(got[1, 2].isnan().all())
    assert "-87.33" in c.c_source or "-708.39" in c.c_source


def test_linear_bias_fuses_into_the_activation_kernel():
    """``addmm`` is a GEMM plus one bias pass (``split_addmm``): the C backend does the bias
    add in the kernel of what follows (ReLU: eager's bits; a log-softmax: its libm's)."""
    x, w, b = ember.randn(32, 24), ember.randn(16, 24), ember.randn(16)
    w2, b2 = ember.randn(5, 16), ember.randn(5)
    c = _check(lambda x, w, b: F.linear(x, w, b).relu(), x, w, b, rtol=0, atol=0)
    assert c.kernels == 1 and "addmm" not in c.source
    c = _check(lambda x, w, b: F.log_softmax(F.linear(x, w, b), -1), x.relu() @ w.t(), w2, b2,
               rtol=1e-5, atol=1e-6)
    assert c.kernels <= 2 and "addmm" not in c.source and c.source.count("_matmul(") == 1


def test_size_one_dimensions_strides_do_not_leave_the_kernels(capsys):
    """A tensor whose size-1 dimension has another stride than the compiled one addresses the
    same elements: the kernels run (no perf hint). A real layout change runs the NumPy
    function and says so once under ``perf_hints``."""
    from ember.compiler import logs

    x = ember.randn(6, 1, 5)
    c = _compile(lambda a: (a * 3).exp(), x)
    other = ember.as_strided(ember.randn(30), (6, 1, 5), (5, 7, 1))
    logs.set_logs("perf_hints")
    try:
        assert_close(_first(c(other)), (other * 3).exp())
        assert "perf_hints" not in capsys.readouterr().err
        xt = ember.randn(5, 1, 6).permute(2, 1, 0)
        for _ in range(2):
            assert_close(_first(c(xt)), (xt * 3).exp())
        err = capsys.readouterr().err
        assert err.count("[ember.compiler.perf_hints]") == 1
        assert "running the numpy function" in err
    finally:
        logs.set_logs()


def _first(result):
    return result[0] if isinstance(result, tuple) else result


def test_wrapped_results_have_eager_strides_on_size_one_dimensions():
    from ember.compiler.backends.numpy_backend import _wrap

    a = np.arange(4.0, dtype=np.float32)[:, None]  # NumPy: strides (4, 0)
    assert _wrap(a, np.float32).stride() == (1, 1)
    assert _wrap(np.ones((3, 1, 2), np.float32), np.float32).stride() == (2, 2, 1)


def test_cross_entropy_gradient_keeps_the_backward_in_c(capsys):
    """The target's ``unsqueeze`` saved for the backward is a NumPy view with a 0 stride on its
    new axis; wrapped with eager's strides it matches the compiled backward's layout, so the
    backward runs its kernels rather than the NumPy function."""
    from ember.compiler import logs

    ember.manual_seed(0)
    lin = ember.nn.Linear(8, 5)
    x, y = ember.randn(16, 8), ember.randint(0, 5, (16,))
    cf = ember.compile(lambda x, y: F.cross_entropy(lin(x), y), backend="c")
    logs.set_logs("perf_hints")
    try:
        for _ in range(2):
            cf(x, y).backward()
        assert "perf_hints" not in capsys.readouterr().err
    finally:
        logs.set_logs()
    got = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad()
    F.cross_entropy(lin(x), y).backward()
    for g, p in zip(got, lin.parameters(), strict=True):
        assert_close(g, 2 * p.grad, rtol=1e-6, atol=1e-7)


def test_gather_and_scatter_add_of_one_label_per_row_are_kernels():
    """Cross-entropy's ``gather`` of the label's log-probability and its gradient's
    ``scatter_add`` lower to a compare with the position in the row (NOTE [Checked indices]):
    exact values, no NumPy indexing between kernels."""
    from ember.ops.scatter_gather import gather, scatter_add

    x, g = ember.randn(32, 10), ember.randn(32, 1)
    y = ember.randint(0, 10, (32, 1))

    def f(x, y, g):
        logp = F.log_softmax(x, -1)
        picked = gather(logp, -1, y)
        grad = scatter_add(ember.zeros(32, 10), -1, y, g)
        return picked, grad * 2

    c = _check(f, x, y, g, rtol=1e-6, atol=1e-6)
    assert not any(name in c.source for name in ("_gather_values", "_scatter_add_values"))
    ref = gather(_first(_compile(lambda x: F.log_softmax(x, -1), x)(x)), -1, y)
    assert_close(c(x, y, g)[0], ref, rtol=0, atol=0)
    assert_close(c(x, y, g)[1], scatter_add(ember.zeros(32, 10), -1, y, g) * 2, rtol=0, atol=0)


@pytest.mark.parametrize("bad", [10, -1, 12345])
def test_out_of_range_labels_raise_like_eager(bad):
    from ember.ops.scatter_gather import gather

    x, y = ember.randn(8, 10), ember.randint(0, 10, (8, 1))
    c = _compile(lambda x, y: gather(x.exp(), -1, y) * 2, x, y)
    yb = y.clone()
    yb[3, 0] = bad
    with pytest.raises(RuntimeError) as eager:
        gather(x.exp(), -1, yb)
    with pytest.raises(RuntimeError) as compiled:
        c(x, yb)
    assert str(compiled.value) == str(eager.value)
    assert_close(_first(c(x, y)), gather(x.exp(), -1, y) * 2)  # the record was cleared
