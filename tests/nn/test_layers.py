"""Oracle tests: every layer and activation, given torch's weights and the same inputs, gives
torch's outputs, input gradients, parameter gradients and buffers, in train and eval mode."""

from __future__ import annotations

import pytest
import torch

import ember
import ember.nn as nn
from ember.ops.nn_ops import log_softmax, softmax
from tests.nn._oracle import close, run_pair, to_ember

tnn = torch.nn


def _randn(*shape, dtype=torch.float32, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# (id, torch factory, ember factory, input shapes)
LAYERS = [
    ("linear", lambda: tnn.Linear(4, 3), lambda: nn.Linear(4, 3), [(5, 4)]),
    ("linear_nobias_3d", lambda: tnn.Linear(4, 3, bias=False), lambda: nn.Linear(4, 3, False),
     [(2, 5, 4)]),
    ("bilinear", lambda: tnn.Bilinear(3, 2, 4), lambda: nn.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
    ("identity", lambda: tnn.Identity(), lambda: nn.Identity(), [(3, 2)]),
    ("flatten", lambda: tnn.Flatten(), lambda: nn.Flatten(), [(2, 3, 4)]),
    ("unflatten", lambda: tnn.Unflatten(1, (2, 3)), lambda: nn.Unflatten(1, (2, 3)), [(4, 6)]),
    ("layernorm", lambda: tnn.LayerNorm(4), lambda: nn.LayerNorm(4), [(3, 5, 4)]),
    ("layernorm2", lambda: tnn.LayerNorm([2, 4], bias=False),
     lambda: nn.LayerNorm([2, 4], bias=False), [(3, 2, 4)]),
    ("groupnorm", lambda: tnn.GroupNorm(2, 4), lambda: nn.GroupNorm(2, 4), [(3, 4, 5)]),
    ("rmsnorm", lambda: tnn.RMSNorm(4), lambda: nn.RMSNorm(4), [(3, 4)]),
    ("rmsnorm_eps", lambda: tnn.RMSNorm([2, 3], eps=1e-3), lambda: nn.RMSNorm([2, 3], 1e-3),
     [(4, 2, 3)]),
    ("instancenorm2d", lambda: tnn.InstanceNorm2d(3), lambda: nn.InstanceNorm2d(3),
     [(2, 3, 4, 4)]),
    ("instancenorm2d_affine_track", lambda: tnn.InstanceNorm2d(3, affine=True,
                                                               track_running_stats=True),
     lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), [(2, 3, 4, 4)]),
    ("instancenorm2d_unbatched", lambda: tnn.InstanceNorm2d(3), lambda: nn.InstanceNorm2d(3),
     [(3, 4, 4)]),
    ("batchnorm1d", lambda: tnn.BatchNorm1d(3), lambda: nn.BatchNorm1d(3), [(6, 3)]),
    ("batchnorm1d_3d", lambda: tnn.BatchNorm1d(3), lambda: nn.BatchNorm1d(3), [(4, 3, 5)]),
    ("batchnorm2d", lambda: tnn.BatchNorm2d(3), lambda: nn.BatchNorm2d(3), [(2, 3, 4, 4)]),
    ("batchnorm2d_noaffine", lambda: tnn.BatchNorm2d(3, affine=False),
     lambda: nn.BatchNorm2d(3, affine=False), [(2, 3, 2, 2)]),
    ("batchnorm2d_notrack", lambda: tnn.BatchNorm2d(3, track_running_stats=False),
     lambda: nn.BatchNorm2d(3, track_running_stats=False), [(2, 3, 2, 2)]),
    ("prelu", lambda: tnn.PReLU(), lambda: nn.PReLU(), [(3, 4)]),
    ("prelu_channels", lambda: tnn.PReLU(3), lambda: nn.PReLU(3), [(2, 3, 4)]),
]

ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("SELU", ()),
    ("CELU", (1.3,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()),
    ("Sigmoid", ()), ("Tanh", ()), ("Hardtanh", (-0.5, 1.5)), ("Hardswish", ()),
    ("Hardsigmoid", ()), ("Softplus", ()), ("Softplus", (2.0, 1.0)), ("Softsign", ()),
    ("Softmax", (1,)), ("LogSoftmax", (1,)), ("Softmin", (0,)), ("GLU", (1,)),
    ("LogSigmoid", ()), ("Threshold", (0.1, -2.0)), ("Hardshrink", (0.3,)),
    ("Softshrink", (0.3,)), ("Tanhshrink", ()),
]


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name,tf,ef,shapes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(name, tf, ef, shapes, mode):
    torch.manual_seed(0)
    tm, em = tf(), ef()
    getattr(tm, mode)()
    getattr(em, mode)()
    inputs = [_randn(*s, seed=i + 1) for i, s in enumerate(shapes)]
    run_pair(tm, em, inputs)


@pytest.mark.parametrize("name,tf,ef,shapes", LAYERS[:3] + LAYERS[6:9] + LAYERS[14:17],
                         ids=[c[0] for c in LAYERS[:3] + LAYERS[6:9] + LAYERS[14:17]])
def test_layer_float64(name, tf, ef, shapes):
    tm, em = tf().double(), ef().double()
    inputs = [_randn(*s, dtype=torch.float64, seed=i + 3) for i, s in enumerate(shapes)]
    run_pair(tm, em, inputs, tol=1e-10)


def test_noncontiguous_input():
    tm, em = tnn.Linear(4, 3), nn.Linear(4, 3)
    x = _randn(4, 5).t()  # (5, 4), transposed
    run_pair(tm, em, [x])
    tm, em = tnn.LayerNorm(5), nn.LayerNorm(5)
    run_pair(tm, em, [_randn(5, 3).t()[::2]])


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=[f"{a}{b}" for a, b in ACTIVATIONS])
def test_activation_matches_torch(name, args):
    tm, em = getattr(tnn, name)(*args), getattr(nn, name)(*args)
    x = _randn(4, 6) * 3
    x[0, :3] = torch.tensor([0.0, 3.0, -3.0])  # kinks of relu6/hardswish/hardsigmoid
    run_pair(tm, em, [x])
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("LeakyReLU", (0.1,)), ("ELU", ()),
                                       ("SELU", ()), ("CELU", ()), ("SiLU", ()), ("Mish", ()),
                                       ("Hardtanh", ()), ("Hardswish", ()), ("Hardsigmoid", ()),
                                       ("ReLU6", ()), ("Threshold", (0.0, 1.0))])
def test_inplace_activation(name, args):
    tm = getattr(tnn, name)(*args, inplace=True)
    em = getattr(nn, name)(*args, inplace=True)
    x = _randn(3, 4) * 3
    tx = x.clone().requires_grad_(True)
    ex = to_ember(x, True)
    ty, ey = tm(tx * 1), em(ex * 1)
    close(ey, ty)
    g = _randn(3, 4, seed=5)
    (ty * g).sum().backward()
    (ey * to_ember(g)).sum().backward()
    close(ex.grad, tx.grad)
    # on a tensor that needs no grad, the input itself is overwritten
    plain = to_ember(x)
    assert em(plain) is plain
    close(plain, tm(x.clone()))


def test_activations_float64_and_large_values():
    x = torch.tensor([-100.0, -30.0, -1e-3, 0.0, 1e-3, 25.0, 100.0], dtype=torch.float64)
    for name in ("GELU", "SiLU", "Mish", "Softplus", "LogSigmoid", "ELU", "SELU"):
        run_pair(getattr(tnn, name)(), getattr(nn, name)(), [x], tol=1e-12)


def test_softmax_dtype_and_dims():
    x = _randn(2, 3, 4)
    for dim in (0, 1, -1):
        close(softmax(to_ember(x), dim), torch.softmax(x, dim))
        close(log_softmax(to_ember(x), dim), torch.log_softmax(x, dim))
    out = softmax(to_ember(x).half(), 1, dtype=ember.float32)
    assert out.dtype == ember.float32
    close(out, torch.softmax(x.half(), 1, dtype=torch.float32), 1e-3, 1e-3)
    m = ember.empty(2, 3, device="meta")
    assert softmax(m, 1).shape == (2, 3)
    assert to_ember(x).softmax(1).shape == (2, 3, 4)
    with pytest.raises(IndexError):
        softmax(to_ember(x), 3)
    inf = torch.tensor([[-float("inf"), 0.0], [-float("inf"), -float("inf")]])
    close(softmax(to_ember(inf), 1), torch.softmax(inf, 1))
    close(log_softmax(to_ember(inf), 1), torch.log_softmax(inf, 1))


def test_softmax_double_backward():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: softmax(t, 1), (x,))
    assert ember.autograd.gradgradcheck(lambda t: log_softmax(t, 0), (x,))
    assert ember.autograd.gradcheck(lambda t: nn.functional.gelu(t, approximate="tanh"), (x,))
    assert ember.autograd.gradgradcheck(nn.functional.gelu, (x,))
    assert ember.autograd.gradgradcheck(lambda t: nn.functional.gelu(t, "tanh"), (x,))
    for name in ("silu", "mish", "softplus", "elu", "leaky_relu", "logsigmoid", "hardswish"):
        assert ember.autograd.gradcheck(getattr(nn.functional, name), (x,)), name


def test_gelu_second_derivative_matches_torch():
    x = _randn(5, dtype=torch.float64) * 2
    for approximate in ("none", "tanh"):
        tx = x.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate).sum(),
                                   tx, create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), tx)
        ex = to_ember(x, True)
        (eg,) = ember.autograd.grad(nn.functional.gelu(ex, approximate).sum(), ex,
                                    create_graph=True)
        (egg,) = ember.autograd.grad(eg.sum(), ex)
        close(eg, g, 1e-10, 1e-10)
        close(egg, gg, 1e-10, 1e-10)


_EXTREMES = [0.0, -0.0, 1e-30, -1e-30, 8.0, -8.0, 30.0, -30.0, 100.0, -100.0,
             float("inf"), float("-inf"), float("nan")]


def _hostile(dtype):
    """A (96, 600) block large enough for workspace-sized passes, with extreme values, and
    its transposed / strided views."""
    x = _randn(600, 96) * 4
    x[0, :len(_EXTREMES)] = torch.tensor(_EXTREMES)
    x = x.to(dtype)
    return [x.t(), x.t()[:, ::3], x[::2]]


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_native_layer_norm_matches_torch(affine, dtype):
    """(out, mean, rstd) and the input / weight / bias gradients of the fused op against
    torch's, on a permuted input normalised over two trailing dims; mean and rstd never
    require grad; autograd saves no full-size intermediate but the input."""
    from ember.ops.nn_ops import native_layer_norm
    tol = 1e-5 if dtype is torch.float32 else 1e-12
    x = (_randn(4, 6, 3, 5, dtype=dtype) * 3 + 1).permute(0, 2, 3, 1)  # (4, 3, 5, 6)
    w = _randn(5, 6, dtype=dtype, seed=2) if affine != "none" else None
    b = _randn(5, 6, dtype=dtype, seed=3) if affine == "both" else None
    targs = [t.clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    eargs = [to_ember(t, True) if t is not None else None for t in (x, w, b)]
    t_out = torch.native_layer_norm(targs[0], [5, 6], targs[1], targs[2], 1e-4)
    e_out = native_layer_norm(eargs[0], [5, 6], eargs[1], eargs[2], 1e-4)
    for e, t in zip(e_out, t_out):
        close(e, t, tol, tol)
    assert not e_out[1].requires_grad and not e_out[2].requires_grad
    assert e_out[0].grad_fn._saved_result1.grad_fn is None
    g = _randn(4, 3, 5, 6, dtype=dtype, seed=4)
    t_out[0].backward(g)
    e_out[0].backward(to_ember(g))
    for e, t in zip(eargs, targs):
        if t is not None:
            close(e.grad, t.grad, tol * 10, tol * 10)


def test_native_layer_norm_double_backward_half_and_errors():
    from ember.ops.nn_ops import native_layer_norm
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, dtype=ember.float64, requires_grad=True)
    fn = lambda *a: native_layer_norm(a[0], [4], a[1], a[2], 1e-5)[0]  # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))
    h = _randn(3, 8).half()
    t_half = torch.native_layer_norm(h, [8], None, None, 1e-5)
    e_half = native_layer_norm(to_ember(h.float()).half(), [8], None, None, 1e-5)
    assert [t.dtype for t in e_half] == [ember.float16] * 3
    for e, t in zip(e_half, t_half):
        close(e.float(), t.float(), 2e-3, 2e-3)
    x32 = to_ember(_randn(2, 4))
    for bad, kind in [((x32, [4], ember.ones(3), None), "weight of shape"),
                      ((x32, [4], None, ember.ones(3)), "bias of shape"),
                      ((x32, [3], None, None), "expected input with shape"),
                      ((x32, [4], ember.ones(4, dtype=ember.float64), None), "mixed dtype")]:
        with pytest.raises(RuntimeError, match=kind):
            native_layer_norm(*bad, 1e-5)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        native_layer_norm(ember.arange(4), [4], None, None, 1e-5)
    empty = native_layer_norm(ember.empty(0, 4), [4], None, None, 1e-5)
    assert empty[0].shape == (0, 4) and empty[1].shape == (0, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16], ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_kernels_on_hostile_inputs(dtype, approximate):
    """gelu and gelu_backward computed in place (NOTE [Kernel workspace]) match torch on big,
    non-contiguous inputs with infinities, nan and both tails."""
    from ember.ops.nn_ops import gelu, gelu_backward
    tol = {torch.float32: 2e-6, torch.float64: 1e-12}.get(dtype, 1e-2)
    for x in _hostile(dtype):
        g = _randn(*x.shape, seed=4).to(dtype)
        ex, eg = to_ember(x.float()).to(getattr(ember, str(dtype)[6:])), \
            to_ember(g.float()).to(getattr(ember, str(dtype)[6:]))
        y = gelu(ex, approximate=approximate)
        assert y.dtype == ex.dtype and y.is_contiguous()
        close(y.float(), torch.nn.functional.gelu(x, approximate=approximate).float(), tol, tol)
        close(gelu_backward(eg, ex, approximate=approximate).float(),
              torch.ops.aten.gelu_backward(g, x, approximate=approximate).float(),
              tol * 5, tol * 5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_kernels_on_hostile_inputs(dtype, log):
    """Rows with +inf, -inf only, or nan become nan exactly where torch's do."""
    tf = torch.log_softmax if log else torch.softmax
    ef = log_softmax if log else softmax
    tol = {torch.float32: 1e-5, torch.float64: 1e-12}.get(dtype, 2e-2)
    for x in _hostile(dtype):
        x = x.clone()
        x[1] = float("-inf")
        for dim in (0, 1, -1):
            e = ef(to_ember(x.float()).to(getattr(ember, str(dtype)[6:])), dim)
            close(e.float(), tf(x, dim).float(), tol, tol)


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
def test_batchnorm_running_stats_several_steps(cls, momentum):
    tm, em = getattr(tnn, cls)(3, momentum=momentum), getattr(nn, cls)(3, momentum=momentum)
    shape = (5, 3) if cls == "BatchNorm1d" else (4, 3, 2, 2)
    for step in range(4):
        x = _randn(*shape, seed=10 + step) * (step + 1) + step
        run_pair(tm, em, [x], copy=step == 0, seed=step)
    assert int(em.num_batches_tracked) == 4
    em.eval()
    tm.eval()
    run_pair(tm, em, [_randn(*shape, seed=99)], copy=False)


def test_batchnorm_updates_under_no_grad_and_errors():
    bn = nn.BatchNorm1d(2)
    with ember.no_grad():
        bn(ember.randn(4, 2))
    assert int(bn.num_batches_tracked) == 1
    assert not bool((bn.running_mean == 0).all())
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        bn(ember.randn(1, 2))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(ember.randn(2, 2, 2, 2))
    bn.eval()
    y = bn(ember.randn(1, 2, requires_grad=True))
    assert y.requires_grad  # eval() does not turn off autograd


def test_embedding():
    tm = tnn.Embedding(10, 4, padding_idx=2)
    em = nn.Embedding(10, 4, padding_idx=2)
    assert bool((em.weight[2] == 0).all())
    em.load_state_dict({"weight": to_ember(tm.weight)})
    idx = torch.tensor([[1, 2, 3], [2, 1, 9]])
    ty, ey = tm(idx), em(to_ember(idx))
    close(ey, ty)
    g = _randn(2, 3, 4)
    (ty * g).sum().backward()
    (ey * to_ember(g)).sum().backward()
    close(em.weight.grad, tm.weight.grad)
    assert repr(em) == repr(tm)


def test_embedding_scale_grad_and_max_norm():
    tm = tnn.Embedding(6, 3, scale_grad_by_freq=True, max_norm=1.0)
    em = nn.Embedding(6, 3, scale_grad_by_freq=True, max_norm=1.0)
    em.load_state_dict({"weight": to_ember(tm.weight)})
    idx = torch.tensor([0, 1, 1, 4, 1])
    ty, ey = tm(idx), em(to_ember(idx))
    close(ey, ty)
    close(em.weight, tm.weight)  # renormalised in place, like torch
    g = _randn(5, 3)
    (ty * g).sum().backward()
    (ey * to_ember(g)).sum().backward()
    close(em.weight.grad, tm.weight.grad)
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    tm = tnn.EmbeddingBag(10, 3, mode=mode, padding_idx=0)
    em = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=0)
    em.load_state_dict({"weight": to_ember(tm.weight)})
    inp = torch.tensor([1, 2, 0, 4, 5, 0, 7, 3])
    offsets = torch.tensor([0, 2, 2, 5])
    ty = tm(inp, offsets)
    ey = em(to_ember(inp), to_ember(offsets))
    close(ey, ty)
    g = _randn(*ty.shape)
    (ty * g).sum().backward()
    (ey * to_ember(g)).sum().backward()
    close(em.weight.grad, tm.weight.grad)
    two_d = torch.tensor([[1, 2, 3], [4, 0, 9]])
    close(em(to_ember(two_d)), tm(two_d))
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_max_ties_send_the_gradient_to_the_first_position(padding_idx):
    """Equal maxima (repeated rows, equal values in different rows, an all-padding bag): the
    gradient goes to the first position of each bag holding the maximum, as in torch."""
    w = torch.tensor([[1., 2.], [1., 3.], [0., 3.], [1., 2.], [5., -1.]])
    idx = torch.tensor([0, 1, 2, 3, 3, 0, 2, 2, 4, 1])
    offsets = torch.tensor([0, 3, 6, 6, 8])  # a bag of repeated row 2, an empty bag
    tw = w.clone().requires_grad_(True)
    ew = to_ember(w, True)
    ty = torch.nn.functional.embedding_bag(idx, tw, offsets, mode="max", padding_idx=padding_idx)
    ey = nn.functional.embedding_bag(to_ember(idx), ew, to_ember(offsets), mode="max",
                                     padding_idx=padding_idx)
    close(ey, ty)
    g = _randn(*ty.shape, seed=9)
    (ty * g).sum().backward()
    (ey * to_ember(g)).sum().backward()
    close(ew.grad, tw.grad)


def test_embedding_bag_per_sample_weights_and_last_offset():
    tm = tnn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    em = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    em.load_state_dict({"weight": to_ember(tm.weight)})
    inp, offsets = torch.tensor([1, 2, 3, 4]), torch.tensor([0, 1, 4])
    w = _randn(4)
    close(em(to_ember(inp), to_ember(offsets), to_ember(w)), tm(inp, offsets, w))


def test_embedding_from_pretrained():
    w = _randn(4, 2)
    em = nn.Embedding.from_pretrained(to_ember(w))
    assert not em.weight.requires_grad
    close(em(ember.tensor([3])), w[3:4])
