"""Backends: eager replay, NumPy code generation (== eager ember), user callables."""

from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F
from ember.compiler import make_fx
from ember.compiler.backends import compile_graph, list_backends, lookup_backend
from ember.testing import assert_close


def _compiled(fn, *args, backend="numpy"):
    gm = make_fx(fn)(*args)
    return compile_graph(gm.graph, list(args), backend)


def _same(fn, *args, backend="numpy", rtol=None, atol=None):
    got = _compiled(fn, *args, backend=backend)(*args)
    want = fn(*args)
    if not isinstance(want, tuple):
        want, got = (want,), (got,)
    for g, w in zip(got, want, strict=True):
        assert type(g) is ember.Tensor
        assert g.dtype is w.dtype and g.shape == w.shape
        assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return got


def chain(x, y):
    z = x + y
    z = z * 2.0
    z = z.exp()
    z = z - 1.5
    z = z.tanh()
    z = z * y
    z = z.sigmoid()
    z = z + 0.5
    z = z.relu()
    return z / 3.0


FUNCTIONS = {
    "chain": (chain, (64, 64), (64, 64)),
    "broadcast": (lambda x, y: x * y - y.sqrt().abs(), (4, 1), (1, 5)),
    "reductions": (lambda x, y: (x.sum(-1), x.mean(0, keepdim=True), x.amax(1), y.sum()),
                   (3, 4), (2,)),
    "softmax_logsoftmax": (lambda x, y: (x.softmax(-1), F.log_softmax(x, 0)), (3, 5), (1,)),
    "matmul": (lambda x, y: (x @ y, (x @ y).t() @ x), (4, 6), (6, 3)),
    "batched_matmul": (lambda x, y: x @ y, (2, 3, 4, 6), (6, 5)),
    "layer_norm": (lambda x, y: F.layer_norm(x, (6,)), (2, 3, 6), (1,)),
    "gelu_tanh": (lambda x, y: F.gelu(x, approximate="tanh") + F.gelu(y), (5,), (5,)),
    "where_compare": (lambda x, y: ember.where(x > y, x, y * 2) + (x == y), (3, 4), (3, 4)),
    "views": (lambda x, y: (x.t().reshape(-1)[2:7] + y[1], x.unsqueeze(0).expand(2, 3, 4)),
              (3, 4), (3, 5)),
    "cat_stack": (lambda x, y: (ember.cat([x, x * 2], 1), ember.stack([x, x], 0)), (2, 3), (1,)),
    "clamp_masked_fill": (lambda x, y: x.clamp(-0.5, 0.5).masked_fill(x > 0.2, 9.0), (3, 3),
                          (1,)),
    "casts": (lambda x, y: (x.to(ember.int64), (x > 0).float() + x.double()), (4,), (1,)),
}


@pytest.mark.parametrize("backend", ["numpy", "eager"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_backend_equals_eager(name, backend):
    fn, sx, sy = FUNCTIONS[name]
    _same(fn, ember.randn(*sx), ember.randn(*sy).abs() + 0.1, backend=backend)


@pytest.mark.parametrize("name", ["chain", "broadcast", "reductions", "matmul", "views"])
def test_numpy_backend_non_contiguous_inputs(name):
    fn, sx, sy = FUNCTIONS[name]
    x = ember.randn(*reversed(sx)).t() if len(sx) == 2 else ember.randn(*sx)
    y = ember.randn(*reversed(sy)).t() if len(sy) == 2 else ember.randn(*sy)
    assert len(sx) != 2 or 1 in sx or not x.is_contiguous()
    _same(fn, x, y.abs() + 0.1)


def test_numpy_backend_renders_covered_ops_without_ember_calls():
    fn = _compiled(chain, ember.randn(8, 8), ember.randn(8, 8))
    assert fn.fallbacks == []
    assert "np.tanh" in fn.source and "_op_" not in fn.source


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "int64", "uint8"])
def test_other_dtypes_fall_back_to_ember_ops_and_stay_exact(dtype):
    d = getattr(ember, dtype)
    x = (ember.arange(12).reshape(3, 4) % 7).to(d)
    y = (ember.arange(4) + 1).to(d)

    def f(a, b):
        return a * b + a, (a + b).sum(0), a.t()[1:]

    got = _same(f, x, y)
    fn = _compiled(f, x, y)
    assert fn.fallbacks  # arithmetic on these dtypes is ember's own
    assert got[0].dtype is d


def test_integer_overflow_and_division_match_eager():
    x = ember.tensor([100, -100, 7], dtype=ember.int8)
    _same(lambda a: (a * 3, a / 2, a // 3), x)


def test_gpt_forward_numpy_equals_eager():
    from ember.examples.gpt import GPT, GPTConfig

    ember.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)).eval()
    idx = ember.randint(0, 11, (3, 8))
    with ember.no_grad():
        fn = _compiled(lambda i: m(i)[0], idx)
        assert fn.fallbacks == []
        assert_close(fn(idx), m(idx)[0], rtol=1e-5, atol=1e-5)


def test_view_outputs_alias_the_input_as_in_eager():
    x = ember.randn(3, 4)
    fn = _compiled(lambda a: (a.view(-1), a.t(), a * 2), x)
    v, t, _ = fn(x)
    assert v.untyped_storage() is x.untyped_storage()
    assert t._base is x and v._base is x
    v[0] = 100.0
    assert x[0, 0].item() == 100.0 and t[0, 0].item() == 100.0


def test_inplace_on_input_bumps_version_like_eager():
    x = ember.ones(3)
    fn = _compiled(lambda a: a.add_(1).mul(2), ember.ones(3))
    v = x._version
    out = fn(x)
    assert x.tolist() == [2.0, 2.0, 2.0] and out.tolist() == [4.0, 4.0, 4.0]
    assert x._version == v + 1


def test_outputs_are_fresh_tensors_each_call():
    x = ember.randn(4)
    fn = _compiled(lambda a: a + 1, x)
    a, b = fn(x), fn(x)
    assert a.untyped_storage() is not b.untyped_storage()
    a.add_(1)
    assert_close(b, x + 1)


def test_inputs_requiring_grad_run_eagerly_with_correct_gradients():
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3)
    fn = _compiled(lambda a, b: (a * b).sin().sum(), w, x)
    fn(w, x).backward()
    g = w.grad.clone()
    w.grad = None
    (w * x).sin().sum().backward()
    assert_close(g, w.grad)


def test_user_backend_receives_graph_module_and_examples():
    seen = []

    def my_backend(gm, example_inputs):
        seen.append((gm.graph.op_count(), len(example_inputs)))
        return gm.forward

    x = ember.randn(3)
    out = _compiled(lambda a: a.exp() + 1, x, backend=my_backend)(x)
    assert seen == [(2, 1)]
    assert_close(out, x.exp() + 1)


def test_backend_registry_and_errors():
    assert {"eager", "numpy"} <= set(list_backends())
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        lookup_backend("nope")

    def bad(gm, example_inputs):
        return 3

    with pytest.raises(TypeError, match="returned int"):
        _compiled(lambda a: a + 1, ember.ones(2), backend=bad)


def test_floating_errors_are_silent_like_eager(recwarn):
    x = ember.tensor([0.0, -1.0, 1e30])
    _same(lambda a: ((a / 0.0) + a.log() + a.exp() * 1e30).sqrt(), x)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_zero_size_and_zero_dim():
    _same(lambda a, b: (a * 2, b + 1, (b * a.sum())), ember.randn(0, 3), ember.tensor(2.0))


def test_view_of_a_large_intermediate_outlives_the_call():
    x = ember.randn(128, 256)  # intermediates above the allocator threshold
    fn = _compiled(lambda a: ((a * 2).relu().t()[3:], a.sum()), x)
    out, _ = fn(x)
    junk = [fn(ember.randn(128, 256)) for _ in range(3)]  # reuse freed blocks
    assert_close(out, (x * 2).relu().t()[3:])
    del junk


def test_mutation_through_a_view_of_an_intermediate_reaches_its_base():
    def f(a):
        b = a * 2
        v = b.view(-1)
        v.add_(1)
        return b
    _same(f, ember.randn(3, 4).t())


def test_outputs_viewing_an_ember_op_result_keep_its_memory():
    x = ember.ones(2, 3)
    fn = _compiled(lambda a: (ember.eye(64)[1] + 0 * a.sum(), ember.eye(3)[0]), x)
    _, row = fn(x)
    junk = [ember.randn(3, 3) for _ in range(8)]  # would reuse a freed block
    assert row.tolist() == [1.0, 0.0, 0.0]
    del junk
