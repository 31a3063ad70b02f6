"""What a node saves, against torch: ``grad_fn._saved_<name>`` under torch's schema names,
present or None as torch has them (NOTE [Conditional saves] in ember/autograd/kernel.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _cases(lib):
    w = lib.ones(3, 4).requires_grad_()
    v = lib.full((3, 4), 2.0).requires_grad_()
    c = lib.full((3, 4), 3.0)
    m = lib.ones(4, 5).requires_grad_()
    mc = lib.ones(4, 5)
    b = lib.ones(5).requires_grad_()
    F = lib.nn.functional
    return {
        "mul both": lambda: w * v, "mul self": lambda: w * c, "mul other": lambda: c * w,
        "mul scalar": lambda: w * 2.0, "mul int scalar": lambda: w * 2,
        "div both": lambda: w / v, "div self": lambda: w / c, "div other": lambda: c / w,
        "div scalar": lambda: w / 2.0,
        "pow scalar": lambda: w ** 2, "pow tensor": lambda: w ** v,
        "mm both": lambda: w.mm(m), "mm self": lambda: w.mm(mc), "mm mat2": lambda: c.mm(m),
        "addmm": lambda: lib.addmm(b, w, m), "addmm mat1": lambda: lib.addmm(b.detach(), w, mc),
        "addmm mat2": lambda: lib.addmm(b, c, m),
        "addmm scaled": lambda: lib.addmm(b, w, m, beta=0.5, alpha=2.0),
        "add": lambda: w + v, "add alpha": lambda: lib.add(w, v, alpha=2),
        "sub alpha": lambda: lib.sub(w, c, alpha=3),
        "exp": lambda: w.exp(), "tanh": lambda: w.tanh(), "sigmoid": lambda: w.sigmoid(),
        "relu": lambda: w.relu(), "log": lambda: w.log(),
        "sum": lambda: w.sum(), "sum dim": lambda: w.sum(1), "mean": lambda: w.mean(),
        "mean dim": lambda: w.mean(1, keepdim=True),
        "softmax": lambda: w.softmax(1), "log_softmax": lambda: w.log_softmax(0),
        "linear": lambda: F.linear(w, m.t(), b), "linear no bias": lambda: F.linear(w, m.t()),
        "linear constant input": lambda: F.linear(c, m.t(), b),
    }


def _describe(node, names):
    out = {}
    for name in names:
        try:
            value = getattr(node, name)
        except AttributeError:
            out[name] = "missing"
            continue
        if isinstance(value, torch.Tensor | ember.Tensor):
            out[name] = ("tensor", tuple(value.shape), str(value.dtype).split(".")[-1])
        else:
            out[name] = value
    return out


# torch's PowBackward1 keeps the result for the exponent's gradient; ember's one pow node
# recomputes it there instead (no activation kept for the common tensor ** tensor-constant)
_RECOMPUTED = {"pow tensor": ("_saved_result",)}


@pytest.mark.parametrize("case", list(_cases(torch)))
def test_saved_fields_match_torch(case):
    t_node = _cases(torch)[case]().grad_fn
    e_node = _cases(ember)[case]().grad_fn
    assert type(e_node).__name__ == type(t_node).__name__.replace("Backward1", "Backward0") \
        .replace("Backward2", "Backward0")
    # torch's fields, less the symbolic size/stride records (``_saved_self_sym_sizes``)
    names = [n for n in dir(t_node) if n.startswith("_saved_") and "_sym_" not in n and
             n not in _RECOMPUTED.get(case, ())]
    assert _describe(e_node, names) == _describe(t_node, names)


def test_saved_values_are_the_inputs():
    w = ember.tensor([[1.0, 2.0]], requires_grad=True)
    m = ember.tensor([[3.0], [4.0]])
    node = w.mm(m).grad_fn
    assert node._saved_self is None
    np.testing.assert_array_equal(node._saved_mat2.numpy(), m.numpy())
    assert node._saved_mat2.data_ptr() == m.data_ptr()


def test_fields_the_rule_never_saves_do_not_exist():
    w = ember.ones(2, requires_grad=True)
    node = (w + 1).grad_fn
    with pytest.raises(AttributeError):
        _ = node._saved_self
    with pytest.raises(AttributeError):
        _ = node._saved_result
    with pytest.raises(AttributeError):
        _ = node._saved_no_such_argument


def test_saved_fields_after_backward_raise_like_torch():
    def f(lib):
        w = lib.ones(2, requires_grad=True)
        y = w * w
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            _ = y.grad_fn._saved_self
    f(torch)
    f(ember)


def _packed_shapes(lib, fn):
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sorted(packed)


@pytest.mark.parametrize("what", ["w * 2.0", "w * c", "c * w", "x @ w", "x @ w.t()", "w / c",
                                  "linear", "mm both", "addmm constant input"])
def test_only_needed_tensors_are_packed_like_torch(what):
    def run(lib):
        lib.manual_seed(0)
        w = lib.ones(4, 4).requires_grad_()
        c = lib.full((4, 4), 2.0)
        x = lib.ones(3, 4)
        b = lib.zeros(4).requires_grad_()
        fns = {"w * 2.0": lambda: w * 2.0, "w * c": lambda: w * c, "c * w": lambda: c * w,
               "x @ w": lambda: x @ w, "x @ w.t()": lambda: x @ w.t(), "w / c": lambda: w / c,
               "linear": lambda: lib.nn.functional.linear(x, w, b),
               "mm both": lambda: w.mm(w * 1.0),
               "addmm constant input": lambda: lib.addmm(b, x, w)}
        return _packed_shapes(lib, fns[what])

    assert run(ember) == run(torch)


def test_scalar_factor_saves_nothing():
    w = ember.ones(3, requires_grad=True)
    assert _packed_shapes(ember, lambda: w * 2.0) == []
    y = w * 2.0
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_pack_hook_that_records_ops_does_not_recurse():
    # the saved_tensors_hooks docstring example: ``t * 1`` inside pack saves nothing
    x = ember.ones(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        y = (x * x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("needs", ["self", "other", "both"])
def test_in_place_mul_saves_conditionally_and_differentiates_like_torch(needs):
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=needs in ("self", "both"))
        b = lib.tensor([0.5, 4.0, -1.0], requires_grad=needs in ("other", "both"))
        a2 = a * 1.0
        packed = _packed_shapes(lib, lambda: a2.mul_(b))
        leaves = [t for t in (a, b) if t.requires_grad]
        grads = lib.autograd.grad(a2.sum(), leaves)
        return packed, [g.tolist() for g in grads]

    assert run(ember) == run(torch)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                    ((4,), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
                                    ((2, 3, 4), (2, 4, 5))])
@pytest.mark.parametrize("needs", ["a", "b", "both"])
def test_matmul_gradients_with_conditional_saves(shapes, needs):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def run(lib):
        a = lib.tensor(arrays[0], requires_grad=needs in ("a", "both"))
        b = lib.tensor(arrays[1], requires_grad=needs in ("b", "both"))
        leaves = [t for t in (a, b) if t.requires_grad]
        out = lib.matmul(a, b)
        return [g.detach().numpy() for g in lib.autograd.grad((out * out).sum(), leaves)]

    for e, t in zip(run(ember), run(torch)):
        # float32 products of a few terms: a few ulps of the largest values
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-4 * np.abs(t).max())


@pytest.mark.parametrize("op", ["bmm", "mv", "dot", "vdot"])
@pytest.mark.parametrize("needs", ["self", "other", "both"])
def test_products_save_each_operand_only_for_the_other(op, needs):
    shapes = {"bmm": ((2, 3, 4), (2, 4, 5)), "mv": ((3, 4), (4,)), "dot": ((4,), (4,)),
              "vdot": ((4,), (4,))}[op]
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def run(lib, fields=None):
        a = lib.tensor(arrays[0], requires_grad=needs in ("self", "both"))
        b = lib.tensor(arrays[1], requires_grad=needs in ("other", "both"))
        out = getattr(lib, op)(a, b)
        node = out.grad_fn
        if fields is None:  # torch's
            fields = [n for n in dir(node) if n.startswith("_saved_") and "_sym_" not in n]
        described = _describe(node, fields)
        leaves = [t for t in (a, b) if t.requires_grad]
        grads = lib.autograd.grad(out.sum(), leaves)
        return fields, described, [g.detach().numpy() for g in grads]

    fields, t_fields, t_grads = run(torch)
    _, e_fields, e_grads = run(ember, fields)
    assert len(fields) == 2 and e_fields == t_fields
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)
