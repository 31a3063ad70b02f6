"""ember.autocast against torch.autocast("cpu"): which operators cast and to what, the values
and gradients that result, region nesting and state, the weight-cast cache, custom Functions
(custom_fwd / custom_bwd), checkpointing inside a region, and torch's errors and warnings."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember.dispatch.dispatcher import dispatch_state
from ember.utils.checkpoint import checkpoint

LOWER = {"bfloat16": (ember.bfloat16, torch.bfloat16), "float16": (ember.float16, torch.float16)}
# one rounding to bfloat16 of O(1) values, then float32 sums of a few terms
TOL = {"bfloat16": 3e-2, "float16": 4e-3}


def _pair(shape, dtype="float32", layout="contiguous", seed=0, requires_grad=True):
    """The same random data as an ember and a torch tensor, in a hostile layout."""
    rng = np.random.default_rng(seed)
    full = shape[::-1] if layout == "permuted" else \
        (*shape[:-1], 2 * shape[-1]) if layout == "strided" else shape
    a = rng.standard_normal(full).astype("float32")
    t = torch.tensor(a).to(getattr(torch, dtype))
    e = ember.tensor(a).to(getattr(ember, dtype))
    if layout == "permuted":
        t, e = t.permute(*reversed(range(t.dim()))), e.permute(*reversed(range(e.dim())))
    elif layout == "strided":
        t, e = t[..., ::2], e[..., ::2]
    if requires_grad:
        t, e = t.detach().requires_grad_(True), e.detach().requires_grad_(True)
    return e, t


def _run(fn_e, fn_t, inputs, lower="bfloat16", grad=True):
    """Call both under autocast, compare dtype, values and the inputs' gradients."""
    e_in, t_in = zip(*inputs) if inputs else ((), ())
    with ember.autocast("cpu", dtype=LOWER[lower][0]):
        e_out = fn_e(*e_in)
    with torch.autocast("cpu", dtype=LOWER[lower][1]):
        t_out = fn_t(*t_in)
    assert str(e_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]
    tol = TOL[lower] if e_out.dtype in (ember.bfloat16, ember.float16) else 1e-5
    np.testing.assert_allclose(e_out.float().detach().numpy(), t_out.float().detach().numpy(),
                               rtol=tol, atol=tol)
    if grad and t_out.requires_grad:
        g = np.random.default_rng(1).standard_normal(tuple(t_out.shape)).astype("float32")
        (t_out.float() * torch.tensor(g)).sum().backward()
        (e_out.float() * ember.tensor(g)).sum().backward()
        for e, t in zip(e_in, t_in):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                assert e.grad.dtype is e.dtype
                gt = TOL[lower] if e.dtype in (ember.bfloat16, ember.float16) else tol
                np.testing.assert_allclose(e.grad.float().numpy(), t.grad.float().numpy(),
                                           rtol=2 * gt, atol=2 * gt)
    return e_out


# (id, ember fn, torch fn, input shapes)
MATMULS = [
    ("mm", ember.mm, torch.mm, [(4, 5), (5, 3)]),
    ("matmul", ember.matmul, torch.matmul, [(2, 4, 5), (5, 3)]),
    ("matmul_mv", ember.matmul, torch.matmul, [(4, 5), (5,)]),
    ("bmm", ember.bmm, torch.bmm, [(2, 4, 5), (2, 5, 3)]),
    ("addmm", ember.addmm, torch.addmm, [(4, 3), (4, 5), (5, 3)]),
    ("baddbmm", ember.baddbmm, torch.baddbmm, [(2, 4, 3), (2, 4, 5), (2, 5, 3)]),
    ("addbmm", ember.addbmm, torch.addbmm, [(4, 3), (2, 4, 5), (2, 5, 3)]),
    ("einsum", lambda a, b: ember.einsum("ij,jk->ik", a, b),
     lambda a, b: torch.einsum("ij,jk->ik", a, b), [(4, 5), (5, 3)]),
    ("linear_2d", EF.linear, TF.linear, [(4, 5), (3, 5), (3,)]),
    ("linear_3d", EF.linear, TF.linear, [(2, 4, 5), (3, 5), (3,)]),
    ("conv1d", EF.conv1d, TF.conv1d, [(2, 3, 8), (4, 3, 3), (4,)]),
    ("conv2d", EF.conv2d, TF.conv2d, [(2, 3, 6, 6), (4, 3, 3, 3), (4,)]),
    ("conv_transpose2d", EF.conv_transpose2d, TF.conv_transpose2d,
     [(2, 3, 5, 5), (3, 4, 3, 3), (4,)]),
    ("prelu", EF.prelu, TF.prelu, [(4, 3), (1,)]),
    ("sdpa", EF.scaled_dot_product_attention, TF.scaled_dot_product_attention,
     [(2, 4, 8), (2, 6, 8), (2, 6, 8)]),
]


@pytest.mark.parametrize("lower", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["contiguous", "permuted", "strided"])
@pytest.mark.parametrize("case", MATMULS, ids=[c[0] for c in MATMULS])
def test_lower_precision_ops_match_torch(case, layout, lower):
    _, fe, ft, shapes = case
    inputs = [_pair(s, layout=layout if len(s) > 1 else "contiguous", seed=i)
              for i, s in enumerate(shapes)]
    out = _run(fe, ft, inputs, lower)
    assert out.dtype is LOWER[lower][0]


def _cross_entropy_inputs():
    e, t = _pair((4, 5))
    return [(e, t), (ember.tensor([0, 2, 4, 1]), torch.tensor([0, 2, 4, 1]))]


def _probs():
    e, t = _pair((4, 5), requires_grad=False)
    e, t = e.sigmoid().requires_grad_(True), t.sigmoid().requires_grad_(True)
    return e, t


FP32 = [
    ("mse_loss", EF.mse_loss, TF.mse_loss, lambda: [_pair((4, 5)), _pair((4, 5), seed=1)]),
    ("l1_loss", EF.l1_loss, TF.l1_loss, lambda: [_pair((4, 5)), _pair((4, 5), seed=1)]),
    ("smooth_l1_loss", EF.smooth_l1_loss, TF.smooth_l1_loss,
     lambda: [_pair((4, 5)), _pair((4, 5), seed=1)]),
    ("huber_loss", EF.huber_loss, TF.huber_loss, lambda: [_pair((4, 5)), _pair((4, 5), seed=1)]),
    ("cross_entropy", EF.cross_entropy, TF.cross_entropy, _cross_entropy_inputs),
    ("nll_loss", lambda x, y: EF.nll_loss(x.log_softmax(-1), y),
     lambda x, y: TF.nll_loss(x.log_softmax(-1), y), _cross_entropy_inputs),
    ("bce_with_logits", EF.binary_cross_entropy_with_logits,
     TF.binary_cross_entropy_with_logits, lambda: [_pair((4, 5)), _probs()]),
    ("binary_cross_entropy", EF.binary_cross_entropy, TF.binary_cross_entropy,
     lambda: [_probs(), _probs()]),
    ("kl_div", functools.partial(EF.kl_div, reduction="batchmean"),
     functools.partial(TF.kl_div, reduction="batchmean"), lambda: [_pair((4, 5)), _probs()]),
    ("prod", lambda x: x.prod(), lambda x: x.prod(), lambda: [_pair((3, 4))]),
    ("prod_dim", lambda x: x.prod(1), lambda x: x.prod(1), lambda: [_pair((3, 4))]),
    ("trace", ember.trace, torch.trace, lambda: [_pair((4, 4))]),
    ("cdist", ember.cdist, torch.cdist, lambda: [_pair((4, 3)), _pair((5, 3), seed=1)]),
    ("inv", lambda x: ember.linalg.inv(x + 4 * ember.eye(4)),
     lambda x: torch.linalg.inv(x + 4 * torch.eye(4)), lambda: [_pair((4, 4))]),
    ("pad_reflect_1d", lambda x: EF.pad(x, (2, 1), mode="reflect"),
     lambda x: TF.pad(x, (2, 1), mode="reflect"), lambda: [_pair((2, 3, 5))]),
    ("pad_reflect_2d", lambda x: EF.pad(x, (1, 1, 2, 1), mode="reflect"),
     lambda x: TF.pad(x, (1, 1, 2, 1), mode="reflect"), lambda: [_pair((2, 3, 5))]),
    ("pad_replicate_3d", lambda x: EF.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"),
     lambda x: TF.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"), lambda: [_pair((1, 2, 3, 3, 3))]),
]


@pytest.mark.parametrize("case", FP32, ids=[c[0] for c in FP32])
def test_float32_ops_compute_in_float32_like_torch(case):
    """Lower-precision inputs are cast up: the op and its gradients are float32 inside."""
    _, fe, ft, make = case
    inputs = [(e.to(ember.bfloat16).detach().requires_grad_(e.requires_grad)
               if e.dtype.is_floating_point else e,
               t.to(torch.bfloat16).detach().requires_grad_(t.requires_grad)
               if t.is_floating_point() else t) for e, t in make()]
    out = _run(fe, ft, inputs)
    assert out.dtype is ember.float32


UNCHANGED = [
    ("add", lambda a, b: a + b, [("bfloat16", (3, 4)), ("float32", (3, 4))], "float32"),
    ("softmax", lambda a: a.softmax(-1), [("bfloat16", (3, 4))], "bfloat16"),
    ("pad_constant", lambda a: EF.pad(a, (1, 1)) if isinstance(a, ember.Tensor)
     else TF.pad(a, (1, 1)), [("bfloat16", (3, 4))], "bfloat16"),
    ("pad_reflect_3d", lambda a: EF.pad(a, (1,) * 6, mode="reflect")
     if isinstance(a, ember.Tensor) else TF.pad(a, (1,) * 6, mode="reflect"),
     [("bfloat16", (1, 2, 3, 3, 3))], "bfloat16"),
    ("mm_float64", lambda a, b: a @ b, [("float64", (3, 4)), ("float64", (4, 2))], "float64"),
    ("mse_float64", lambda a, b: EF.mse_loss(a, b) if isinstance(a, ember.Tensor)
     else TF.mse_loss(a, b), [("float64", (3, 4)), ("float64", (3, 4))], "float64"),
]


@pytest.mark.parametrize("case", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_ops_without_a_policy_and_float64_are_left_alone(case):
    _, fn, specs, expect = case
    inputs = [_pair(s, dtype=d, seed=i) for i, (d, s) in enumerate(specs)]
    out = _run(fn, fn, inputs)
    assert str(out.dtype) == f"ember.{expect}"


def test_integer_matmul_is_not_cast():
    with ember.autocast("cpu"):
        out = ember.mm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64))
    assert out.dtype is ember.int64


@pytest.mark.parametrize("op", ["cat", "stack"])
@pytest.mark.parametrize("dtypes,lower", [
    (("bfloat16", "float32"), "bfloat16"), (("bfloat16", "bfloat16"), "bfloat16"),
    (("float64", "bfloat16"), "bfloat16"), (("float32", "float16"), "bfloat16"),
    (("float16", "float32"), "float16"), (("int64", "bfloat16"), "bfloat16"),
])
def test_cat_and_stack_promote_to_the_widest_input_like_torch(op, dtypes, lower):
    inputs = [_pair((2, 3), dtype=d, seed=i, requires_grad=d != "int64")
              for i, d in enumerate(dtypes)]
    _run(lambda *ts: getattr(ember, op)(list(ts)), lambda *ts: getattr(torch, op)(list(ts)),
         inputs, lower)


@pytest.mark.parametrize("dtypes,lower", [(("float16", "float16"), "bfloat16"),
                                          (("bfloat16", "float32"), "float16")])
def test_promotion_refuses_two_lower_precisions_like_torch(dtypes, lower):
    e_in = [_pair((2, 3), dtype=d, requires_grad=False)[0] for d in dtypes]
    t_in = [_pair((2, 3), dtype=d, requires_grad=False)[1] for d in dtypes]
    with torch.autocast("cpu", dtype=LOWER[lower][1]), \
            pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
        torch.cat(t_in)
    with ember.autocast("cpu", dtype=LOWER[lower][0]), \
            pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
        ember.cat(e_in)


def test_index_copy_promotes():
    (xe, xt), (se, st) = _pair((4, 3), "bfloat16"), _pair((2, 3), seed=1)
    idx_e, idx_t = ember.tensor([3, 0]), torch.tensor([3, 0])
    out = _run(lambda x, s: x.index_copy(0, idx_e, s), lambda x, s: x.index_copy(0, idx_t, s),
               [(xe, xt), (se, st)])
    assert out.dtype is ember.float32


def test_mixed_precision_training_step_matches_torch():
    """A Linear-ReLU-Linear MLP trained one step under autocast: fp32 parameters get fp32
    gradients equal to torch's, and the loss is float32."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    em = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 8)).astype("float32")
    y = np.array([0, 3, 1, 2, 3])
    with torch.autocast("cpu"):
        tl = TF.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
    with ember.autocast("cpu"):
        el = EF.cross_entropy(em(ember.tensor(x)), ember.tensor(y))
    assert el.dtype is ember.float32 and tl.dtype is torch.float32
    assert abs(el.item() - tl.item()) < 1e-2
    tl.backward(), el.backward()
    for (name, tp), ep in zip(tm.named_parameters(), em.parameters()):
        assert ep.grad.dtype is ember.float32, name
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=3e-2, atol=3e-2)


def test_leaf_weight_casts_are_cached_within_the_region():
    x = ember.randn(3, 4)
    w = ember.randn(4, 2, requires_grad=True)
    with ember.autocast("cpu"):
        a, b = x @ w, x @ w
        cast_a, cast_b = a.grad_fn.next_functions[1][0], b.grad_fn.next_functions[1][0]
        assert cast_a is cast_b  # one cast of w, reused
        nonleaf = w * 1
        c, d = x @ nonleaf, x @ nonleaf
        assert c.grad_fn.next_functions[1][0] is not d.grad_fn.next_functions[1][0]
    with ember.autocast("cpu"):
        e = x @ w
    assert e.grad_fn.next_functions[1][0] is not cast_a  # cleared at the region's exit
    with ember.autocast("cpu", cache_enabled=False):
        f, g = x @ w, x @ w
    assert f.grad_fn.next_functions[1][0] is not g.grad_fn.next_functions[1][0]
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.sum(0, keepdim=True).t().expand(4, 2)
                               .numpy(), rtol=2e-2, atol=2e-2)


def test_regions_nest_restore_state_and_work_as_decorators():
    a = ember.randn(2, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu") and (a @ a).dtype is ember.float32
        with ember.autocast("cpu", dtype=ember.float16):
            assert (a @ a).dtype is ember.float16
            assert ember.get_autocast_dtype("cpu") is ember.float16
        assert (a @ a).dtype is ember.bfloat16
    assert (a @ a).dtype is ember.float32 and ember.get_autocast_dtype("cpu") is ember.bfloat16

    @ember.autocast("cpu")
    def f(t):
        return t @ t

    assert f(a).dtype is ember.bfloat16 and (a @ a).dtype is ember.float32
    with pytest.raises(ZeroDivisionError), ember.autocast("cpu"):
        raise ZeroDivisionError
    assert not ember.is_autocast_enabled("cpu") and (a @ a).dtype is ember.float32
    ds = dispatch_state()
    assert not ds.included >> ember.dispatch.DispatchKey.AutocastCPU & 1


def test_nesting_counter_and_state_functions_like_torch():
    for lib in (torch, ember):
        assert lib.autocast_increment_nesting() == 1
        assert lib.autocast_decrement_nesting() == 0
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu")
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_cache_enabled(False)
        assert not lib.is_autocast_cache_enabled()
        lib.set_autocast_cache_enabled(True)
        lib.clear_autocast_cache()
    with ember.autocast("cpu"):
        ember.set_autocast_dtype("cpu", ember.float16)
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype is ember.float16
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_errors_and_warnings_like_torch(lib):
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        lib.autocast(1)
    for bad in (lib.float32, lib.float64, lib.int32):
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                             "supported. Disabling autocast."):
            region = lib.autocast("cpu", dtype=bad)
        with region:
            assert not lib.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = lib.autocast("cuda")
    with region:
        assert not lib.is_autocast_enabled("cuda")
    assert lib.autocast("cpu").fast_dtype is lib.bfloat16


def test_custom_fwd_and_custom_bwd_like_torch():
    def make(lib, cast_inputs):
        class Scale(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                ctx.seen = (x.dtype, lib.is_autocast_enabled("cpu"))
                return x @ w

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                ctx.seen_bwd = lib.is_autocast_enabled("cpu")
                return g @ w.t(), x.t() @ g
        return Scale

    for cast_inputs in (None, "float32"):
        seen = {}
        for lib in (torch, ember):
            fn = make(lib, None if cast_inputs is None else getattr(lib, cast_inputs))
            x = lib.ones(2, 3, dtype=lib.bfloat16, requires_grad=True)
            w = lib.ones(3, 2, requires_grad=True)
            with lib.autocast("cpu"):
                out = fn.apply(x, w)
            out.float().sum().backward()
            seen[lib.__name__] = (str(out.dtype).split(".")[-1], str(x.grad.dtype).split(".")[-1],
                                  str(w.grad.dtype).split(".")[-1])
        assert seen["torch"] == seen["ember"], (cast_inputs, seen)


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_recomputes_in_the_forward_autocast_state(reentrant):
    """Forward under autocast, backward outside: the recomputation casts as the forward did,
    so the determinism check passes and gradients equal the plain autocast run's."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, 6)).astype("float32")
    w0 = rng.standard_normal((6, 6)).astype("float32")

    def block(x, w):
        return (x @ w).relu() @ w

    grads = []
    for use_ckpt in (False, True):
        x, w = ember.tensor(x0, requires_grad=True), ember.tensor(w0, requires_grad=True)
        with ember.autocast("cpu"):
            out = checkpoint(block, x, w, use_reentrant=reentrant) if use_ckpt else block(x, w)
        assert out.dtype is ember.bfloat16
        out.float().sum().backward()
        grads.append((x.grad.numpy().copy(), w.grad.numpy().copy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_dispatch_table_shows_the_autocast_kernel():
    from ember.utils.dispatch import dispatch_table

    table = str(dispatch_table("mm"))
    assert "AutocastCPU" in table and "autocast_kernel" in table
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.autocast("cpu"):
            ember.ones(2) + 1  # an op without a policy falls through, silently
