"""Module semantics against torch: registration, iteration, shared parameters, the structural
version, hooks (order, kwargs, always_call, full backward), state dicts (strict errors, assign),
repr, conversion, train/eval, zero_grad and the containers."""

from __future__ import annotations

import re
from collections import OrderedDict

import pytest
import torch

import ember
import ember.nn as nn
from tests.nn._oracle import close, copy_state, to_ember

tnn = torch.nn


class Net(nn.Module):
    def __init__(self, lib=nn):
        super().__init__()
        self.fc1 = lib.Linear(3, 4)
        self.bn = lib.BatchNorm1d(4)
        self.act = lib.ReLU()
        self.fc2 = lib.Linear(4, 2)
        self.register_buffer("scale", ember.ones(2))
        self.register_buffer("cache", ember.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.bn(self.fc1(x)))) * self.scale


class TNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tnn.Linear(3, 4)
        self.bn = tnn.BatchNorm1d(4)
        self.act = tnn.ReLU()
        self.fc2 = tnn.Linear(4, 2)
        self.register_buffer("scale", torch.ones(2))
        self.register_buffer("cache", torch.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.bn(self.fc1(x)))) * self.scale


# -- registration and iteration ---------------------------------------------------------------
def test_registration_and_names_match_torch():
    e, t = Net(), TNet()
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters(prefix="m", recurse=False)] == []
    assert [n for n, _ in e.fc1.named_parameters(prefix="m")] == ["m.weight", "m.bias"]


def test_attribute_kinds():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    assert "w" in m._parameters and m.w is m._parameters["w"]
    with pytest.raises(TypeError, match="cannot assign 'ember.Tensor' as parameter 'w'"):
        m.w = ember.ones(2)
    m.w = None
    assert m.w is None and "w" in m._parameters
    m.register_buffer("b", ember.zeros(1))
    m.b = ember.ones(1)
    assert m._buffers["b"] is m.b
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'b'"):
        m.b = 3
    m.sub = nn.Linear(1, 1)
    m.sub = nn.Identity()
    assert isinstance(m._modules["sub"], nn.Identity)
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        m.sub  # noqa: B018
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = 1
        m.register_buffer("x", ember.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="ember.nn.Parameter or None required"):
        m.register_parameter("q", ember.ones(1))


def test_assignment_before_init():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Bad()


def test_shared_parameters_counted_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    tied = nn.Module()
    tied.a = nn.Linear(2, 2)
    tied.b = nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert list(tied.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


def test_structural_version():
    m = nn.Linear(2, 2)
    v = m._structure_version
    m.weight.data_ptr()
    with ember.no_grad():
        m.weight.add_(1)  # in-place: no structural change
    assert m._structure_version == v
    m.extra = nn.ReLU()
    assert m._structure_version == v + 1
    m.extra = nn.Tanh()
    assert m._structure_version == v + 2
    del m.extra
    m.bias = None
    m.register_buffer("buf", ember.zeros(1))
    m.buf = ember.ones(1)
    assert m._structure_version == v + 6
    bn = nn.BatchNorm1d(2)
    v = bn._structure_version
    bn(ember.randn(4, 2))  # running stats update in place
    assert bn._structure_version == v


# -- hooks ------------------------------------------------------------------------------------
def _hook_log(lib_nn, register_global):
    log = []
    m = lib_nn.Linear(2, 2)
    hs = [
        m.register_forward_pre_hook(lambda mod, a: log.append("pre1")),
        m.register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True),
        m.register_forward_pre_hook(lambda mod, a, k: log.append("prekw"), with_kwargs=True),
        m.register_forward_hook(lambda mod, a, o: log.append("fwd1")),
        m.register_forward_hook(lambda mod, a, o: log.append("fwd0"), prepend=True),
        m.register_forward_hook(lambda mod, a, k, o: log.append("fwdkw"), with_kwargs=True),
        register_global.register_module_forward_pre_hook(lambda mod, a: log.append("gpre")),
        register_global.register_module_forward_hook(lambda mod, a, o: log.append("gfwd")),
    ]
    return m, log, hs


def test_forward_hook_order_matches_torch():
    from ember.nn.modules import module as emod
    em, elog, ehs = _hook_log(nn, emod)
    tm, tlog, ths = _hook_log(tnn, tnn.modules.module)
    try:
        em(ember.ones(1, 2))
        tm(torch.ones(1, 2))
    finally:
        for h in ehs[-2:] + ths[-2:]:  # the global hooks
            h.remove()
    assert elog == tlog
    first = list(elog)
    em(ember.ones(1, 2))
    assert elog == first + ["pre0", "pre1", "prekw", "fwd0", "fwd1", "fwdkw"]


def test_hooks_replace_args_and_outputs_and_always_call():
    m = nn.Identity()
    h1 = m.register_forward_pre_hook(lambda mod, a: a[0] * 2)
    h2 = m.register_forward_hook(lambda mod, a, o: o + 1)
    assert m(ember.tensor(1.0)).item() == 3.0
    h1.remove()
    h2.remove()
    m.register_forward_pre_hook(lambda mod, a, k: ((a[0] * 10,), k), with_kwargs=True)
    assert m(ember.tensor(1.0)).item() == 10.0

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    b = Boom()
    b.register_forward_hook(lambda mod, a, o: seen.append("always"), always_call=True)
    b.register_forward_hook(lambda mod, a, o: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        b(ember.ones(1))
    assert seen == ["always"]


def test_full_backward_hooks_match_torch():
    def run(lib, mk, t):
        m = mk()
        log = []
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", go)))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("bw", gi, go)))
        x = t([[1.0, -2.0], [0.5, 3.0]]).requires_grad_(True)
        y = m(x)
        (y * t([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return log, x.grad

    tm = tnn.Linear(2, 2)
    elog, egrad = run(nn, lambda: _copied(tm), ember.tensor)
    tlog, tgrad = run(tnn, lambda: tm, torch.tensor)
    assert [e[0] for e in elog] == [t[0] for t in tlog] == ["pre", "bw"]
    close(elog[0][1][0], tlog[0][1][0])
    close(elog[1][1][0], tlog[1][1][0])
    close(elog[1][2][0], tlog[1][2][0])
    close(egrad, tgrad)


def _copied(tm):
    em = nn.Linear(2, 2)
    copy_state(tm, em)
    return em


def test_backward_hook_replaces_grads_and_no_input_grad():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x = ember.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    assert bool((x.grad == 0).all())
    seen = []
    m2 = nn.Linear(2, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    m2(ember.ones(1, 2)).sum().backward()  # input needs no grad: grad_input is (None,)
    assert seen == [(None,)]
    assert bool((m2.bias.grad == 2).all())


# -- state dict -------------------------------------------------------------------------------
def test_state_dict_roundtrip_and_metadata():
    e, t = Net(), TNet()
    copy_state(t, e)
    sd = e.state_dict()
    assert list(sd._metadata) == list(t.state_dict()._metadata)
    assert sd._metadata["bn"] == {"version": 2}
    assert not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data_ptr() == e.fc1.weight.data_ptr()
    assert e.state_dict(keep_vars=True)["fc1.weight"] is e.fc1.weight
    e2 = Net()
    assert repr(e2.load_state_dict(sd)) == "<All keys matched successfully>"
    for k, v in e2.state_dict().items():
        close(v, sd[k])


def test_strict_load_reports_every_problem_in_one_error():
    e, t = Net(), TNet()
    bad = {k: to_ember(v) for k, v in t.state_dict().items()}
    del bad["fc1.bias"]
    del bad["bn.running_var"]
    bad["fc2.weight"] = ember.zeros(5, 5)
    bad["extra.key"] = ember.zeros(1)
    bad["fc1.nope"] = ember.zeros(1)
    tbad = {k: torch.from_numpy(v.numpy().copy()) for k, v in bad.items()}
    with pytest.raises(RuntimeError) as te:
        t.load_state_dict(tbad)
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(bad)
    expected = str(te.value).replace("torch.Size", "ember.Size").replace("TNet", "Net")
    assert str(ee.value) == expected
    assert re.search(r'Missing key\(s\) in state_dict: "fc1.bias", "bn.running_var"',
                     str(ee.value))
    with pytest.raises(RuntimeError, match="size mismatch for fc2.weight"):
        e.load_state_dict(bad, strict=False)  # shape mismatches are errors even when lax
    del bad["fc2.weight"]
    res = e.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias", "bn.running_var", "fc2.weight"]
    assert res.unexpected_keys == ["extra.key", "fc1.nope"]


def test_load_assign_and_hooks():
    m = nn.Linear(2, 2)
    w = ember.ones(2, 2)
    calls = []
    m.register_load_state_dict_post_hook(lambda mod, keys: calls.append(list(keys.missing_keys)))
    m.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == w.data_ptr()
    assert calls == [[]]
    m2 = nn.Linear(2, 2)
    old = m2.weight
    m2.load_state_dict({"weight": w, "bias": ember.zeros(2)})
    assert m2.weight is old and bool((old == 1).all())


def test_batchnorm_old_checkpoint_without_num_batches_tracked():
    bn = nn.BatchNorm1d(2)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""] = {"version": 1}
    bn.load_state_dict(sd)
    assert int(bn.num_batches_tracked) == 0


# -- repr, conversion, modes --------------------------------------------------------------------
def test_repr_matches_torch():
    e, t = Net(), TNet()
    assert repr(e).replace("Net(", "TNet(", 1) == repr(t)
    es = nn.Sequential(OrderedDict(a=nn.Linear(2, 2), b=nn.ModuleList(
        [nn.Linear(2, 2) for _ in range(3)] + [nn.Dropout()])))
    ts = tnn.Sequential(OrderedDict(a=tnn.Linear(2, 2), b=tnn.ModuleList(
        [tnn.Linear(2, 2) for _ in range(3)] + [tnn.Dropout()])))
    assert repr(es) == repr(ts)
    assert repr(nn.ModuleList()) == repr(tnn.ModuleList())
    for em, tm in [(nn.BatchNorm1d(3, momentum=None), tnn.BatchNorm1d(3, momentum=None)),
                   (nn.LayerNorm([2, 3]), tnn.LayerNorm([2, 3])), (nn.RMSNorm(4), tnn.RMSNorm(4)),
                   (nn.GroupNorm(2, 4), tnn.GroupNorm(2, 4)),
                   (nn.InstanceNorm2d(3), tnn.InstanceNorm2d(3)),
                   (nn.Dropout2d(0.3), tnn.Dropout2d(0.3)), (nn.Bilinear(2, 3, 4),
                                                              tnn.Bilinear(2, 3, 4)),
                   (nn.Flatten(0), tnn.Flatten(0)), (nn.Unflatten(1, (2, 3)),
                                                     tnn.Unflatten(1, (2, 3))),
                   (nn.PReLU(3), tnn.PReLU(3)), (nn.EmbeddingBag(3, 4, mode="max"),
                                                 tnn.EmbeddingBag(3, 4, mode="max"))]:
        assert repr(em) == repr(tm)


def test_to_keeps_parameter_identity_and_converts_grads():
    m = Net()
    w = m.fc1.weight
    m(ember.randn(4, 3)).sum().backward()
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype == ember.float64 and w.grad.dtype == ember.float64
    assert m.bn.num_batches_tracked.dtype == ember.int64  # integer buffers keep their dtype
    assert m.scale.dtype == ember.float64
    m.to(ember.float32)
    assert w.dtype == ember.float32 and w.requires_grad and w.is_leaf
    m.to("cpu", dtype=ember.float16)
    assert m.fc2.bias.dtype == ember.float16
    m.float()
    m.to(ember.empty(1, dtype=ember.float64))
    assert w.dtype == ember.float64
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(ember.int64)


def test_train_eval_requires_grad_zero_grad_apply():
    m = Net()
    assert m.eval() is m and not any(x.training for x in m.modules())
    assert m.train() is m and all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    m(ember.randn(4, 3)).sum().backward()
    g = m.fc1.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad is g and bool((g == 0).all())
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    order = []
    m.apply(lambda mod: order.append(type(mod).__name__))
    assert order == ["Linear", "BatchNorm1d", "ReLU", "Linear", "Net"]


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert m.get_submodule("1") is m[1]
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("0.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        m.get_parameter("1.running_mean")


# -- containers -------------------------------------------------------------------------------
def test_sequential():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert s[0] is a and s[-1] is c and len(s) == 3
    assert isinstance(s[1:], nn.Sequential) and list(s[1:]) == [b, c]
    assert [n for n, _ in s[1:].named_children()] == ["1", "2"]
    del s[1]
    assert list(s._modules) == ["0", "1"] and s[1] is c
    s.insert(1, b)
    s.append(nn.Tanh())
    assert [type(x).__name__ for x in s] == ["Linear", "ReLU", "Linear", "Tanh"]
    assert s.pop(3).__class__ is nn.Tanh
    assert s(ember.ones(4, 2)).shape == (4, 1)
    with pytest.raises(IndexError, match="index 9 is out of range"):
        s[9]  # noqa: B018
    assert len(s + nn.Sequential(nn.ReLU())) == 4


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml += [nn.ReLU()]
    ml.extend([nn.Tanh()])
    assert len(ml) == 3 and len(list(ml.parameters())) == 2
    assert isinstance(ml[1:], nn.ModuleList)
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Linear(1, 1)
    md.update([("c", nn.Tanh())])
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md
    assert md.pop("a").__class__ is nn.ReLU and len(md) == 2


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(ember.ones(1))
    assert len(list(pl.parameters())) == 3
    pd = nn.ParameterDict({"w": ember.ones(2)})
    pd["b"] = nn.Parameter(ember.zeros(1))
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)


def test_default_initialisation_bounds():
    import math
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)  # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), ...)
    assert float(lin.weight.abs().max()) <= bound
    assert float(lin.weight.abs().max()) > 0.9 * bound
    assert float(lin.bias.abs().max()) <= bound
    bil = nn.Bilinear(10, 7, 3)
    assert float(bil.weight.abs().max()) <= 1 / math.sqrt(10)
    emb = nn.Embedding(2000, 5)
    assert abs(float(emb.weight.std()) - 1.0) < 0.05
    bn = nn.BatchNorm2d(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert nn.PReLU().weight.tolist() == [0.25]
