"""nn.utils.fusion (conv/linear + BatchNorm folding), nn.utils.stateless.functional_call and
nn.utils.skip_init, against torch: fused weights and outputs, functional values and gradients
w.r.t. the given tensors, tied weights, strictness, write-back, restoration and errors."""

from __future__ import annotations

import pytest
import torch

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations as ez
from ember.nn.utils.stateless import functional_call
from tests.nn._oracle import close, copy_state, to_ember

tnn = torch.nn
t_call = torch.func.functional_call


def _g(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _trained_bn(tbn, ebn, channels, seed=0, affine_seed=1):
    """Give both BatchNorms the same non-trivial running statistics and affine parameters."""
    with torch.no_grad():
        tbn.running_mean.copy_(_g((channels,), seed))
        tbn.running_var.copy_(_g((channels,), seed + 1).abs() + 0.5)
        if tbn.affine:
            tbn.weight.copy_(_g((channels,), affine_seed))
            tbn.bias.copy_(_g((channels,), affine_seed + 1))
    copy_state(tbn, ebn)
    tbn.eval()
    ebn.eval()


# -- fusion ------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias,affine", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("kind", ["conv1d", "conv2d", "convT2d"])
def test_fuse_conv_bn_eval_matches_torch(kind, bias, affine):
    make = {"conv1d": lambda lib: lib.Conv1d(3, 4, 3, bias=bias),
            "conv2d": lambda lib: lib.Conv2d(3, 4, 3, bias=bias),
            "convT2d": lambda lib: lib.ConvTranspose2d(3, 4, 3, bias=bias)}[kind]
    bn = {"conv1d": "BatchNorm1d"}.get(kind, "BatchNorm2d")
    torch.manual_seed(0)
    tc, ec = make(tnn).eval(), make(nn).eval()
    copy_state(tc, ec)
    tbn, ebn = getattr(tnn, bn)(4, affine=affine), getattr(nn, bn)(4, affine=affine)
    _trained_bn(tbn, ebn, 4)
    transpose = kind == "convT2d"
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tbn, transpose)
    ef = nn.utils.fuse_conv_bn_eval(ec, ebn, transpose)
    assert type(ef) is type(ec) and ef is not ec
    assert isinstance(ef.weight, ember.nn.Parameter) and isinstance(ef.bias, ember.nn.Parameter)
    close(ef.weight, tf.weight)
    close(ef.bias, tf.bias)
    if not bias:
        assert ec.bias is None  # the original is untouched
    shape = (2, 3, 7) if kind == "conv1d" else (2, 3, 6, 6)
    x = _g(shape, 5)
    close(ef(to_ember(x)), ebn(ec(to_ember(x))), 1e-5, 1e-5)
    close(ef(to_ember(x)), tf(x), 1e-5, 1e-5)


@pytest.mark.parametrize("features", [4, 1])
def test_fuse_linear_bn_eval_matches_torch(features):
    torch.manual_seed(0)
    tl, el = tnn.Linear(3, 4).eval(), nn.Linear(3, 4).eval()
    copy_state(tl, el)
    tbn, ebn = tnn.BatchNorm1d(features), nn.BatchNorm1d(features)
    _trained_bn(tbn, ebn, features)
    tf = torch.nn.utils.fuse_linear_bn_eval(tl, tbn)
    ef = nn.utils.fuse_linear_bn_eval(el, ebn)
    close(ef.weight, tf.weight)
    close(ef.bias, tf.bias)
    x = _g((5, 3), 2)
    close(ef(to_ember(x)), tf(x), 1e-5, 1e-5)


def test_fuse_weights_functions_and_dtypes():
    torch.manual_seed(0)
    w, b = _g((4, 3, 2, 2), 1).double(), None
    rm, rv = _g((4,), 2), _g((4,), 3).abs() + 0.1
    bw, bb = _g((4,), 4), _g((4,), 5)
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(w, b, rm, rv, 1e-5, None, bb)
    ew, eb = nn.utils.fuse_conv_bn_weights(to_ember(w), b, to_ember(rm), to_ember(rv), 1e-5, None,
                                           to_ember(bb))
    assert ew.dtype == ember.float64 and eb.dtype == ember.float64  # the conv's dtypes
    close(ew, tw)
    close(eb, tb)
    lw = _g((4, 3), 6)
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(lw, None, rm, rv, 1e-3, bw, bb)
    ew, eb = nn.utils.fuse_linear_bn_weights(to_ember(lw), None, to_ember(rm), to_ember(rv), 1e-3,
                                             to_ember(bw), to_ember(bb))
    close(ew, tw)
    close(eb, tb)
    assert ew.requires_grad is tw.requires_grad and eb.requires_grad is tb.requires_grad


def test_fusion_errors_match_torch():
    for args_t, args_e in (((tnn.Conv2d(2, 2, 1), tnn.BatchNorm2d(2).eval()),
                            (nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2).eval())),
                           ((tnn.Conv2d(2, 2, 1).eval(), tnn.BatchNorm2d(2)),
                            (nn.Conv2d(2, 2, 1).eval(), nn.BatchNorm2d(2)))):
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            torch.nn.utils.fuse_conv_bn_eval(*args_t)
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            nn.utils.fuse_conv_bn_eval(*args_e)
    no_stats = nn.BatchNorm2d(2, track_running_stats=False).eval()
    with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be None"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(2, 2, 1).eval(), no_stats)
    with pytest.raises(AssertionError) as t_info:
        torch.nn.utils.fuse_linear_bn_eval(tnn.Linear(2, 3).eval(), tnn.BatchNorm1d(2).eval())
    with pytest.raises(AssertionError) as e_info:
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(2).eval())
    assert str(e_info.value) == str(t_info.value)


# -- functional_call ---------------------------------------------------------------------------
class _Net:
    """fc1 -> relu -> bn -> fc2, with a buffer; the same network in either library."""

    @staticmethod
    def make(lib):
        class Net(lib.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.Linear(3, 4)
                self.bn = lib.BatchNorm1d(4)
                self.fc2 = lib.Linear(4, 2)
                self.register_buffer("scale", (ember if lib is nn else torch).ones(2) * 2)

            def forward(self, x, shift=0.0):
                return self.fc2(self.bn(self.fc1(x).relu())) * self.scale + shift

        return Net()


def _pair(make, seed=0):
    torch.manual_seed(seed)
    tm, em = make(tnn), make(nn)
    copy_state(tm, em)
    return tm, em


def test_functional_call_values_and_gradients():
    tm, em = _pair(_Net.make)
    names = ["fc1.weight", "fc2.bias", "scale"]
    t_given = {n: _g(tuple(dict(tm.state_dict())[n].shape), i).requires_grad_(True)
               for i, n in enumerate(names)}
    e_given = {n: to_ember(v, True) for n, v in t_given.items()}
    x = _g((6, 3), 9).t().contiguous().t()  # non-contiguous
    e_before = {k: v.clone() for k, v in em.state_dict().items()}
    t_out = t_call(tm, t_given, (x,), {"shift": 1.5})
    e_out = functional_call(em, e_given, (to_ember(x),), {"shift": 1.5})
    close(e_out, t_out)
    g = _g(tuple(t_out.shape), 3)
    (t_out * g).sum().backward()
    (e_out * to_ember(g)).sum().backward()
    for n in names:
        if t_given[n].grad is None:
            assert e_given[n].grad is None, n
        else:
            close(e_given[n].grad, t_given[n].grad, 1e-5, 1e-5, n)
    # the module's own parameters got no gradient for the swapped names, and were restored
    assert em.fc1.weight.grad is None and em.fc1.bias.grad is not None
    assert isinstance(em.fc1.weight, ember.nn.Parameter)
    for k, v in em.state_dict().items():
        if k not in ("bn.running_mean", "bn.running_var", "bn.num_batches_tracked"):
            close(v, e_before[k], 0, 0, k)
    # BatchNorm's in-place statistics update reached the module's own buffers, as in torch
    close(em.bn.running_mean, tm.bn.running_mean)


def test_functional_call_single_argument_sequence_of_dicts_and_errors():
    tm, em = _pair(lambda lib: lib.Linear(2, 2))
    w, b = _g((2, 2), 1), _g((2,), 2)
    x = _g((3, 2), 3)
    close(functional_call(em, ({"weight": to_ember(w)}, {"bias": to_ember(b)}), to_ember(x)),
          t_call(tm, ({"weight": w}, {"bias": b}), x))
    close(functional_call(em, {}, to_ember(x)), tm(x))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(em, ({"weight": to_ember(w)}, {"weight": to_ember(w)}), to_ember(x))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts"):
        functional_call(em, ({"weight": to_ember(w)}, 3), to_ember(x))
    with pytest.raises(ValueError, match="to be a dict, or a list/tuple of dicts"):
        functional_call(em, 3, to_ember(x))
    with pytest.raises(TypeError, match="is not an instance of ember.Tensor"):
        functional_call(em, {"weight": 3}, to_ember(x))
    with pytest.raises(AttributeError, match="Linear has no attribute `sub`"):
        functional_call(em, {"sub.weight": to_ember(w)}, to_ember(x))


def test_functional_call_strict():
    tm, em = _pair(lambda lib: lib.Linear(2, 2))
    with pytest.raises(RuntimeError) as t_info:
        t_call(tm, {"weight": torch.ones(2, 2), "extra": torch.ones(1)}, torch.ones(1, 2),
               strict=True)
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Linear") as e_info:
        functional_call(em, {"weight": ember.ones(2, 2), "extra": ember.ones(1)},
                        ember.ones(1, 2), strict=True)
    assert str(e_info.value) == str(t_info.value)
    out = functional_call(em, {"weight": ember.ones(2, 2), "bias": ember.zeros(2)},
                          ember.ones(1, 2), strict=True)
    close(out, [[2.0, 2.0]])


def _tied(lib):
    m = lib.Sequential(lib.Linear(2, 2), lib.Linear(2, 2))
    m[1].weight = m[0].weight
    return m


def test_functional_call_tied_weights():
    tm, em = _pair(_tied)
    w = _g((2, 2), 4)
    x = _g((3, 2), 5)
    for tie in (True, False):
        close(functional_call(em, {"0.weight": to_ember(w)}, to_ember(x), tie_weights=tie),
              t_call(tm, {"0.weight": w}, x, tie_weights=tie))
    same = to_ember(w)
    close(functional_call(em, {"0.weight": same, "1.weight": same}, to_ember(x)),
          t_call(tm, {"0.weight": w, "1.weight": w}, x))
    with pytest.raises(ValueError) as t_info:
        t_call(tm, {"0.weight": w, "1.weight": w.clone()}, x)
    with pytest.raises(ValueError, match="which are tied. Consider using tie_weights=False") as e:
        functional_call(em, {"0.weight": to_ember(w), "1.weight": to_ember(w)}, to_ember(x))
    assert str(e.value) == str(t_info.value)
    assert em[1].weight is em[0].weight  # tying restored


def test_functional_call_writes_back_reassigned_buffers_and_restores_on_error():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", ember.zeros(()))

        def forward(self, x):
            self.count = self.count + 1
            return x

    m = Counter()
    given = {"count": ember.tensor(5.0)}
    functional_call(m, given, ember.ones(1))
    assert float(given["count"]) == 6.0 and float(m.count) == 0.0

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(1))

        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    w = b.w
    version = b._structure_version
    with pytest.raises(ValueError, match="boom"):
        functional_call(b, {"w": ember.zeros(1), "new": ember.zeros(1)}, ember.ones(1))
    assert b.w is w and not hasattr(b, "new")
    assert b._structure_version > version  # swaps are structural changes


def test_functional_call_with_parametrization():
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    torch.nn.utils.parametrizations.spectral_norm(tm)
    ez.spectral_norm(em)
    copy_state(tm, em)
    tm.eval()
    em.eval()
    orig = _g((3, 3), 6).requires_grad_(True)
    e_orig = to_ember(orig, True)
    key = "parametrizations.weight.original"
    x = _g((2, 3), 7)
    t_out = t_call(tm, {key: orig}, x)
    e_out = functional_call(em, {key: e_orig}, to_ember(x))
    close(e_out, t_out)
    g = _g((2, 3), 8)
    (t_out * g).sum().backward()
    (e_out * to_ember(g)).sum().backward()
    close(e_orig.grad, orig.grad)
    close(em.weight, tm.weight)  # the module's own original is back
    # giving the parametrized name itself assigns through right_inverse, as torch does
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        class Sq(nn.Module):
            def forward(self, X):
                return X * 2
        m = nn.Linear(2, 2)
        nn.utils.parametrize.register_parametrization(m, "weight", Sq())
        functional_call(m, {"weight": ember.ones(2, 2)}, ember.ones(1, 2))


# -- skip_init ---------------------------------------------------------------------------------
def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 6, 3, bias=True)
    assert type(m) is nn.Linear
    assert m.weight.shape == (3, 6) and m.weight.device.type == "cpu"
    assert isinstance(m.weight, ember.nn.Parameter) and m.weight.requires_grad
    assert m(ember.ones(2, 6)).shape == (2, 3)
    bn = nn.utils.skip_init(nn.BatchNorm1d, 4, device="cpu")
    assert bn.num_batches_tracked.dtype == ember.int64 and bn.running_mean.device.type == "cpu"
    assert nn.utils.skip_init(nn.Linear, 2, 2, device="meta").weight.device.type == "meta"

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(NoDevice, 2)
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        nn.utils.skip_init(int)
    with pytest.raises(RuntimeError):
        torch.nn.utils.skip_init(int)


def test_exports_match_torch():
    names = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
             "fuse_linear_bn_weights", "skip_init", "weight_norm", "remove_weight_norm",
             "spectral_norm", "remove_spectral_norm", "parametrize", "parametrizations",
             "stateless"]
    for n in names:
        assert hasattr(torch.nn.utils, n) and hasattr(nn.utils, n), n
    assert callable(nn.utils.stateless.functional_call)
