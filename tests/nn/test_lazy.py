"""Lazy layers, nn.Buffer and the Uninitialized* placeholders against torch 2.13."""

import numpy as np
import pytest
import torch

import ember
from ember import nn

DTYPES = [(ember.float32, torch.float32), (ember.float64, torch.float64)]

# (name, ctor args/kwargs, input shape)
CASES = [
    ("LazyLinear", (3,), {}, (2, 4)),
    ("LazyLinear", (3,), {"bias": False}, (5, 2, 4)),
    ("LazyConv1d", (4, 3), {}, (2, 2, 8)),
    ("LazyConv1d", (4, 3), {"stride": 2, "padding": 1, "bias": False}, (2, 3, 9)),
    ("LazyConv2d", (4, 3), {"groups": 2}, (2, 2, 6, 6)),
    ("LazyConv2d", (2, (2, 3)), {"padding_mode": "reflect", "padding": 1}, (3, 5, 5)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2, "output_padding": 1}, (2, 2, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "bias": False}, (2, 4, 4, 4)),
    ("LazyConv3d", (4, 3), {"padding": 1}, (2, 2, 4, 3, 4)),
    ("LazyConv3d", (2, (2, 3, 1)), {"padding_mode": "replicate", "padding": 1, "groups": 2},
     (2, 3, 4, 4)),
    ("LazyConvTranspose3d", (4, 3), {"stride": 2, "output_padding": 1}, (2, 2, 2, 3, 2)),
    ("LazyConvTranspose3d", (2, 2), {"groups": 2, "bias": False, "dilation": 2}, (4, 2, 2, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm1d", (), {"affine": False}, (4, 3, 5)),
    ("LazyBatchNorm2d", (), {"momentum": None}, (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 3, 2)),
]


def _t2e(t, dtype=None):
    return ember.tensor(t.detach().numpy().copy(), dtype=dtype)


def _input(shape, tdtype, contiguous):
    g = torch.Generator().manual_seed(0)
    if contiguous:
        return torch.randn(shape, generator=g, dtype=tdtype)
    return torch.randn(tuple(reversed(shape)), generator=g, dtype=tdtype).permute(
        *reversed(range(len(shape))))


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("edt,tdt", DTYPES)
@pytest.mark.parametrize("name,args,kwargs,shape", CASES)
def test_lazy_matches_torch(name, args, kwargs, shape, edt, tdt, contiguous):
    tm = getattr(torch.nn, name)(*args, dtype=tdt, **kwargs)
    em = getattr(nn, name)(*args, dtype=edt, **kwargs)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert em.has_uninitialized_params() and tm.has_uninitialized_params()
    xt = _input(shape, tdt, contiguous).requires_grad_(True)
    tm(xt.detach())  # materialise torch's module first, then copy its weights
    assert type(tm).__name__ == name[4:]
    xe = _t2e(xt, edt)
    # first ember call materialises; shapes and dtypes must match torch's
    em(xe)
    assert type(em) is getattr(nn, name[4:])
    assert not any(isinstance(p, nn.UninitializedParameter) for p in em.parameters())
    assert repr(em) == repr(tm)
    tsd = tm.state_dict()
    esd = em.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert tuple(esd[k].shape) == tuple(tsd[k].shape), k
        assert str(esd[k].dtype).split(".")[-1] == str(tsd[k].dtype).split(".")[-1], k
    # copy torch's values in; outputs and input gradients agree
    em.load_state_dict({k: _t2e(v) for k, v in tsd.items()})
    xe = ember.tensor(xt.detach().numpy().copy(), dtype=edt)
    if not contiguous:
        xe = ember.tensor(xt.detach().numpy().transpose(*reversed(range(xt.dim()))).copy(),
                          dtype=edt).permute(*reversed(range(xt.dim())))
        assert not xe.is_contiguous()
    xe.requires_grad_(True)
    yt, ye = tm(xt), em(xe)
    tol = 1e-5 if tdt == torch.float32 else 1e-10
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=tol, atol=tol)
    g = torch.randn(yt.shape, generator=torch.Generator().manual_seed(1), dtype=tdt)
    yt.backward(g)
    ye.backward(_t2e(g, edt))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=tol * 10,
                                   atol=tol * 10, err_msg=n)


def test_initialisation_follows_reset_parameters():
    ember.manual_seed(0)
    m = nn.LazyLinear(3)
    m(ember.ones(2, 4))
    w = m.weight.detach().numpy()
    bound = 1 / np.sqrt(4)
    assert np.all(np.abs(w) <= bound) and np.std(w) > 0
    assert np.all(np.abs(m.bias.detach().numpy()) <= bound)
    c = nn.LazyConv2d(2, 3)
    c(ember.ones(1, 5, 4, 4))
    bound = 1 / np.sqrt(5 * 9)
    assert np.all(np.abs(c.weight.detach().numpy()) <= bound + 1e-7)
    bn = nn.LazyBatchNorm1d()
    bn.eval()
    bn(ember.ones(2, 3))
    np.testing.assert_array_equal(bn.weight.detach().numpy(), np.ones(3))
    np.testing.assert_array_equal(bn.bias.detach().numpy(), np.zeros(3))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3))
    assert bn.num_batches_tracked.item() == 0
    assert type(bn.running_mean) is ember.Tensor


def test_parameters_keep_identity_and_optimizer():
    m = nn.LazyLinear(2)
    params = list(m.parameters())
    opt = ember.optim.SGD(m.parameters(), lr=0.1)  # torch allows this before materialising
    torch.optim.SGD(torch.nn.LazyLinear(2).parameters(), lr=0.1)
    m(ember.ones(3, 5))
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(type(p) is nn.Parameter and p.requires_grad and p.is_leaf for p in params)
    before = m.weight.detach().clone()
    m(ember.ones(3, 5)).sum().backward()
    opt.step()
    assert not np.allclose(before.numpy(), m.weight.detach().numpy())


def test_module_to_keeps_placeholders():
    for lib in (torch, ember):
        m = lib.nn.LazyBatchNorm1d().double()
        assert isinstance(m.running_mean, lib.nn.UninitializedBuffer)
        m(lib.ones(4, 3, dtype=lib.float64))
        assert m.weight.dtype == lib.float64 and m.running_mean.dtype == lib.float64


def test_uninitialized_errors_match_torch():
    for lib in (torch, ember):
        p = lib.nn.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>"
        assert p.requires_grad and p.dtype == lib.float32
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            _ = p.shape
        assert tuple(p.size()) == (0,)  # torch allows size(): the placeholder's (0,)
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            p.sum()
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            p.numel()
        with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
            p.share_memory_()
        b = lib.nn.UninitializedBuffer()
        assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
        with pytest.raises(RuntimeError, match="Can't access the shape"):
            _ = b.shape


@pytest.mark.parametrize("edt,tdt", DTYPES)
def test_materialize(edt, tdt):
    for lib, d in ((torch, tdt), (ember, edt)):
        p = lib.nn.UninitializedParameter(dtype=d)
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == d
        assert p.requires_grad and p.is_leaf
        q = lib.nn.UninitializedParameter(requires_grad=False)
        q.materialize(4, dtype=d)
        assert tuple(q.shape) == (4,) and q.dtype == d and not q.requires_grad
        b = lib.nn.UninitializedBuffer()
        b.materialize((5,), dtype=d)
        assert type(b) is lib.Tensor and tuple(b.shape) == (5,) and b.dtype == d


def test_lazy_state_dict_and_repr_before_init():
    tm, em = torch.nn.LazyConv1d(3, 2), nn.LazyConv1d(3, 2)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(esd) == list(tsd)
    assert all(isinstance(v, nn.UninitializedParameter) for v in esd.values())
    assert all(isinstance(v, torch.nn.UninitializedParameter) for v in tsd.values())


@pytest.mark.parametrize("name,args,shape", [("LazyLinear", (3,), (2, 4)),
                                             ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
                                             ("LazyBatchNorm2d", (), (2, 3, 2, 2))])
def test_load_state_dict_materialises(name, args, shape):
    tm = getattr(torch.nn, name)(*args)
    tm(torch.randn(shape, generator=torch.Generator().manual_seed(2)))
    sd = {k: _t2e(v) for k, v in tm.state_dict().items()}
    em = getattr(nn, name)(*args)
    res = em.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys
    assert not em.has_uninitialized_params()
    for k, v in em.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    # still lazy in class until the first forward, which then keeps the loaded values
    assert type(em).__name__ == name
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    em.eval(), tm.eval()
    np.testing.assert_allclose(em(_t2e(x)).detach().numpy(), tm(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert type(em).__name__ == name[4:]


def test_load_uninitialized_into_uninitialized_and_mismatch():
    em = nn.LazyLinear(2)
    em.load_state_dict(nn.LazyLinear(2).state_dict())
    assert em.has_uninitialized_params()
    init = nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        init.load_state_dict(nn.LazyLinear(2).state_dict())
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        torch.nn.Linear(3, 2).load_state_dict(torch.nn.LazyLinear(2).state_dict())


def test_lazy_errors():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\)"):
            lib.nn.LazyConv2d(2, 3)(lib.ones(2, 3))
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv1d(4, 3, groups=2)(lib.ones(1, 3, 5))
    m = nn.LazyLinear(2)
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented"):
        nn.modules.lazy.LazyModuleMixin.initialize_parameters(m)


def test_buffer_registration_and_persistence():
    for lib in (torch, ember):
        m = lib.nn.Module()
        src = lib.ones(2)
        m.a = lib.nn.Buffer(src)
        m.b = lib.nn.Buffer(lib.zeros(3), persistent=False)
        m.c = lib.nn.Buffer()
        assert isinstance(m.a, lib.nn.Buffer) and not isinstance(src, lib.nn.Buffer)
        assert type(m.a) is lib.Tensor
        assert [n for n, _ in m.named_buffers()] == ["a", "b", "c"]
        assert list(m.state_dict()) == ["a", "c"]
        assert m.a.data_ptr() == src.data_ptr()
        m.b = lib.ones(4)  # a plain tensor keeps the buffer's persistence
        assert list(m.state_dict()) == ["a", "c"]
        m.a = lib.nn.Buffer(lib.ones(1), persistent=False)
        assert list(m.state_dict()) == ["c"]
        g = lib.ones(2, requires_grad=True) * 2
        m.d = lib.nn.Buffer(g)
        assert m.d.requires_grad and m.d.is_leaf
        m.x = 1
        with pytest.raises(KeyError, match="attribute 'x' already exists"):
            m.x = lib.nn.Buffer(lib.ones(1))
        m.p = lib.nn.Parameter(lib.ones(1))
        with pytest.raises(TypeError, match="cannot assign .* as parameter 'p'"):
            m.p = lib.nn.Buffer(lib.ones(1))
    with pytest.raises(TypeError, match="data must be a Tensor"):
        nn.Buffer([1.0])


def test_uninitialized_buffer_persistence_in_module():
    for lib in (torch, ember):
        m = lib.nn.Module()
        m.u = lib.nn.UninitializedBuffer(persistent=False)
        m.v = lib.nn.UninitializedBuffer()
        assert [n for n, _ in m.named_buffers()] == ["u", "v"]
        assert list(m.state_dict(keep_vars=True)) == ["v"]
