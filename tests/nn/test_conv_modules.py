"""Convolution, pooling, fold/unfold and upsampling modules against torch.

Weights are copied from the torch module through ``state_dict``; outputs, input gradients and
parameter gradients (random cotangent) must agree, for contiguous and non-contiguous inputs,
float32 and float64. Also: default initialisation statistics, constructor errors, reprs,
double backward (gradgradcheck) of the family's operators.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F

DT = {"float32": (torch.float32, 2e-5), "float64": (torch.float64, 1e-10)}


def _e(t: torch.Tensor, requires_grad: bool = False) -> ember.Tensor:
    out = ember.tensor(t.detach().numpy())
    return out.requires_grad_(True) if requires_grad else out


def _close(a, b, tol, what):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def _input(shape, dtype, layout: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    if layout == "permuted":  # memory in reversed order, viewed back
        return torch.randn(tuple(reversed(shape)), generator=g, dtype=dtype).permute(
            *reversed(range(len(shape))))
    if layout == "strided":
        return torch.randn(tuple(2 * s for s in shape), generator=g, dtype=dtype)[
            tuple(slice(None, None, 2) for _ in shape)]
    return torch.randn(shape, generator=g, dtype=dtype)


def _same_geometry(x: torch.Tensor) -> ember.Tensor:
    """An ember leaf equal to ``x`` with ``x``'s strides (memory copied from its storage)."""
    base = ember.tensor(x.detach().as_strided((x.untyped_storage().nbytes() // x.element_size(),),
                                              (1,), 0).numpy())
    return base.as_strided(tuple(x.shape), x.stride(), x.storage_offset()).detach()


def _compare(tm, em, x: torch.Tensor, tol: float, **call):
    """Same weights, same input: outputs, input grad and parameter grads agree."""
    em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    if tm.training is False:
        em.eval()
    tx = x.detach().requires_grad_(True)
    ex = _same_geometry(x).requires_grad_(True)
    assert ex.stride() == tx.stride()
    t_out, e_out = tm(tx, **call), em(ex, **call)
    t_first = t_out[0] if isinstance(t_out, tuple) else t_out
    e_first = e_out[0] if isinstance(e_out, tuple) else e_out
    _close(e_first, t_first, tol, "output")
    if isinstance(t_out, tuple):
        assert e_out[1].tolist() == t_out[1].tolist(), "indices"
    g = torch.randn(t_first.shape, generator=torch.Generator().manual_seed(1), dtype=x.dtype)
    (t_first * g).sum().backward()
    (e_first * _e(g)).sum().backward()
    _close(ex.grad, tx.grad, tol, "input grad")
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        _close(p.grad, tp[name].grad, tol, f"grad of {name}")


CONV2D = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=3, groups=2, dilation=2, padding=2),
    dict(in_channels=4, out_channels=4, kernel_size=3, groups=4, padding="same"),
    dict(in_channels=4, out_channels=6, kernel_size=(2, 4), padding="same", dilation=(1, 2)),
    dict(in_channels=4, out_channels=6, kernel_size=3, padding="valid", stride=(1, 2)),
] + [dict(in_channels=4, out_channels=6, kernel_size=3, padding=(1, 2), padding_mode=m)
     for m in ("reflect", "replicate", "circular")] + [
    dict(in_channels=4, out_channels=6, kernel_size=(2, 3), padding="same", padding_mode="reflect")]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("kw", CONV2D, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()
                                                               if k != "in_channels"))
def test_conv2d_matches_torch(kw, dtype):
    td, tol = DT[dtype]
    torch.manual_seed(0)
    tm = torch.nn.Conv2d(**kw).to(td)
    em = nn.Conv2d(**kw).to(getattr(ember, dtype))
    for layout in ("contiguous", "permuted", "strided"):
        _compare(tm, em, _input((2, 4, 9, 8), td, layout), tol)
        tm.zero_grad()
        em.zero_grad()
    _compare(tm, em, _input((4, 9, 8), td, "contiguous"), tol)  # unbatched


CONV1D = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=2, groups=2,
         dilation=2),
    dict(in_channels=3, out_channels=4, kernel_size=4, padding="same"),
] + [dict(in_channels=3, out_channels=4, kernel_size=3, padding=2, padding_mode=m)
     for m in ("reflect", "replicate", "circular")]


@pytest.mark.parametrize("kw", CONV1D, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()
                                                               if k != "in_channels"))
def test_conv1d_matches_torch(kw):
    td, tol = DT["float64"]
    tm = torch.nn.Conv1d(**kw).double()
    em = nn.Conv1d(**kw).double()
    _compare(tm, em, _input((2, kw["in_channels"], 11), td, "permuted"), tol)


CONVT = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1,
         output_padding=1, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=(2, 3), groups=2, dilation=2,
         output_padding=(1, 0)),
    dict(in_channels=4, out_channels=2, kernel_size=3, padding=2, dilation=2),
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("kw", CONVT, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()
                                                              if k != "in_channels"))
def test_conv_transpose2d_matches_torch(kw, dtype):
    td, tol = DT[dtype]
    tm = torch.nn.ConvTranspose2d(**kw).to(td)
    em = nn.ConvTranspose2d(**kw).to(getattr(ember, dtype))
    _compare(tm, em, _input((2, 4, 5, 6), td, "strided"), tol)


CONV3D = [
    dict(in_channels=2, out_channels=4, kernel_size=3),
    dict(in_channels=2, out_channels=4, kernel_size=(3, 2, 1), stride=(2, 1, 1), padding=1,
         bias=False),
    dict(in_channels=4, out_channels=4, kernel_size=3, groups=2, dilation=(1, 2, 1), padding=2),
    dict(in_channels=2, out_channels=3, kernel_size=(2, 3, 2), padding="same"),
    dict(in_channels=2, out_channels=3, kernel_size=2, padding="valid", stride=2),
] + [dict(in_channels=2, out_channels=3, kernel_size=3, padding=(1, 2, 1), padding_mode=m)
     for m in ("reflect", "replicate", "circular")] + [
    dict(in_channels=2, out_channels=3, kernel_size=(2, 2, 3), padding="same",
         padding_mode="circular")]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("kw", CONV3D, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()
                                                               if k != "in_channels"))
def test_conv3d_matches_torch(kw, dtype):
    td, tol = DT[dtype]
    tm = torch.nn.Conv3d(**kw).to(td)
    em = nn.Conv3d(**kw).to(getattr(ember, dtype))
    shape = (2, kw["in_channels"], 5, 6, 5)
    for layout in ("contiguous", "permuted", "strided"):
        _compare(tm, em, _input(shape, td, layout), tol)
        tm.zero_grad()
        em.zero_grad()
    _compare(tm, em, _input(shape[1:], td, "permuted"), tol)  # unbatched


CONVT3D = [
    dict(in_channels=4, out_channels=2, kernel_size=3),
    dict(in_channels=4, out_channels=2, kernel_size=(3, 2, 2), stride=2, padding=1,
         output_padding=1, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=2, stride=(2, 1, 3), groups=2, dilation=2,
         output_padding=(1, 0, 2)),
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("kw", CONVT3D, ids=lambda kw: "-".join(
    f"{k}{v}" for k, v in kw.items() if k != "in_channels"))
def test_conv_transpose3d_matches_torch(kw, dtype):
    td, tol = DT[dtype]
    tm = torch.nn.ConvTranspose3d(**kw).to(td)
    em = nn.ConvTranspose3d(**kw).to(getattr(ember, dtype))
    _compare(tm, em, _input((2, 4, 3, 4, 3), td, "strided"), tol)
    _compare(tm, em, _input((4, 3, 4, 3), td, "permuted"), tol)


def test_conv_transpose3d_output_size():
    tm = torch.nn.ConvTranspose3d(3, 2, 3, stride=(2, 3, 2), padding=1).double()
    em = nn.ConvTranspose3d(3, 2, 3, stride=(2, 3, 2), padding=1).double()
    x = _input((2, 3, 3, 2, 4), torch.float64, "permuted")
    _compare(tm, em, x, 1e-10, output_size=[6, 6, 8])
    _compare(tm, em, x, 1e-10, output_size=[2, 2, 5, 4, 7])
    with pytest.raises(ValueError):
        tm(x, output_size=[7, 4, 7])
    with pytest.raises(ValueError, match="requested an output size of"):
        em(_e(x), output_size=[7, 4, 7])


def test_conv_transpose_output_size():
    tm = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1).double()
    em = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1).double()
    x = _input((1, 4, 5, 5), torch.float64, "contiguous")
    _compare(tm, em, x, 1e-10, output_size=[10, 10])
    _compare(tm, em, x, 1e-10, output_size=[1, 2, 9, 10])
    with pytest.raises(ValueError, match="requested an output size of"):
        em(_e(x), output_size=[12, 12])
    t1 = torch.nn.ConvTranspose1d(3, 2, 3, stride=3).double()
    e1 = nn.ConvTranspose1d(3, 2, 3, stride=3).double()
    _compare(t1, e1, _input((2, 3, 4), torch.float64, "permuted"), 1e-10, output_size=[14])


POOLS = [
    ("MaxPool2d", dict(kernel_size=2)),
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("MaxPool2d", dict(kernel_size=(2, 3), dilation=2, padding=1, return_indices=True)),
    ("MaxPool1d", dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("AvgPool2d", dict(kernel_size=2, divisor_override=3)),
    ("AvgPool1d", dict(kernel_size=3, padding=1, count_include_pad=False)),
    ("AdaptiveAvgPool2d", dict(output_size=(4, 3))),
    ("AdaptiveAvgPool2d", dict(output_size=(None, 5))),
    ("AdaptiveAvgPool1d", dict(output_size=4)),
    ("AdaptiveMaxPool2d", dict(output_size=(4, 3), return_indices=True)),
    ("AdaptiveMaxPool1d", dict(output_size=5)),
]


@pytest.mark.parametrize("name,kw", POOLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(POOLS)])
@pytest.mark.parametrize("dtype", list(DT))
def test_pooling_matches_torch(name, kw, dtype):
    td, tol = DT[dtype]
    tm, em = getattr(torch.nn, name)(**kw), getattr(nn, name)(**kw)
    shape = (2, 3, 9, 7) if name.endswith("2d") else (2, 3, 11)
    for layout in ("contiguous", "permuted", "strided"):
        _compare(tm, em, _input(shape, td, layout), tol)
    _compare(tm, em, _input(shape[1:], td, "contiguous"), tol)  # unbatched


def test_fold_unfold_modules():
    x = _input((2, 3, 6, 5), torch.float64, "permuted")
    tu = torch.nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    eu = nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    _compare(tu, eu, x, 1e-10)
    cols = tu(x).detach()
    tf = torch.nn.Fold((6, 5), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    ef = nn.Fold((6, 5), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    _compare(tf, ef, cols, 1e-10)


UPSAMPLE = [dict(scale_factor=2, mode="nearest"), dict(size=(7, 11), mode="nearest"),
            dict(scale_factor=1.5, mode="bilinear"), dict(size=(4, 9), mode="bilinear",
                                                          align_corners=True),
            dict(scale_factor=(0.5, 1.7), mode="bilinear", recompute_scale_factor=True)]


@pytest.mark.parametrize("kw", UPSAMPLE, ids=lambda kw: "-".join(f"{k}{v}" for k, v in
                                                                  kw.items()))
def test_upsample_matches_torch(kw):
    _compare(torch.nn.Upsample(**kw), nn.Upsample(**kw),
             _input((2, 3, 5, 6), torch.float64, "strided"), 1e-10)


def test_interpolate_1d_and_errors():
    x = _input((2, 3, 7), torch.float64, "contiguous")
    for kw in (dict(size=12), dict(scale_factor=2.5, mode="linear"),
               dict(size=5, mode="linear", align_corners=True)):
        _close(F.interpolate(_e(x), **kw), torch.nn.functional.interpolate(x, **kw), 1e-10,
               str(kw))
    cases = [(dict(size=3, scale_factor=2), ValueError, "only one of size or scale_factor"),
             (dict(), ValueError, "either size or scale_factor should be defined"),
             (dict(size=3, align_corners=True), ValueError, "align_corners option can only"),
             (dict(size=(3, 3)), ValueError, "same number of spatial dimensions"),
             (dict(size=3, mode="bilinear"), NotImplementedError, "bilinear mode needs 4D")]
    for kw, err, match in cases:
        with pytest.raises(err):
            torch.nn.functional.interpolate(x, **kw)
        with pytest.raises(err, match=match):
            F.interpolate(_e(x), **kw)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_functional_pad_matches_torch(mode):
    x = _input((2, 3, 5, 6), torch.float64, "permuted").requires_grad_(True)
    ex = _e(x, True)
    for pad in ((1, 2), (2, 1, 0, 3), (-1, 2, 1, -2)):
        if mode != "constant" and len(pad) == 2:
            continue
        t, e = torch.nn.functional.pad(x, pad, mode), F.pad(ex, pad, mode)
        _close(e, t, 1e-12, f"{mode}{pad}")
        g = torch.randn(t.shape, dtype=t.dtype)
        tg, = torch.autograd.grad(t, x, g)
        eg, = ember.autograd.grad(e, ex, _e(g))
        _close(eg, tg, 1e-12, f"grad {mode}{pad}")


def test_functional_pad_takes_ints_only_like_torch():
    x = torch.ones(2, 3)
    with pytest.raises(TypeError) as t_err:
        torch.nn.functional.pad(x, (1.5, 1))
    with pytest.raises(TypeError) as e_err:
        F.pad(_e(x), (1.5, 1))
    assert str(e_err.value) == str(t_err.value)
    assert F.pad(_e(x), (1, True)).shape == torch.nn.functional.pad(x, (1, True)).shape


def test_constructor_errors_and_reprs():
    cases = [(dict(groups=0), "groups must be a positive integer"),
             (dict(groups=4), "in_channels must be divisible by groups"),
             (dict(padding="full"), "Invalid padding string"),
             (dict(padding="same", stride=2), "padding='same' is not supported"),
             (dict(padding_mode="wrap"), "padding_mode must be one of")]
    for kw, match in cases:
        with pytest.raises(ValueError):
            torch.nn.Conv2d(6, 4, 3, **kw)
        with pytest.raises(ValueError, match=match):
            nn.Conv2d(6, 4, 3, **kw)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    mods = [("Conv2d", (3, 8, 3), dict(padding=1, padding_mode="reflect", bias=False)),
            ("Conv2d", (4, 8, (3, 2)), dict(stride=2, dilation=2, groups=2)),
            ("Conv1d", (2, 4, 3), dict(padding="same")),
            ("ConvTranspose2d", (4, 2, 3), dict(stride=2, output_padding=1)),
            ("Conv3d", (2, 4, (3, 2, 1)), dict(stride=(1, 2, 1), padding=(1, 0, 0), dilation=2,
                                              groups=2, bias=False, padding_mode="circular")),
            ("Conv3d", (2, 4, 3), dict(padding="same")),
            ("ConvTranspose3d", (2, 4, 3), dict(stride=2, output_padding=1, groups=2)),
            ("MaxPool2d", (2,), {}), ("AvgPool2d", (3,), dict(stride=2)),
            ("AdaptiveAvgPool2d", ((1, 1),), {}), ("Unfold", (2,), {})]
    for name, args, kw in mods:
        assert repr(getattr(nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))


def test_default_initialisation_bounds():
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)); so does bias."""
    m = nn.Conv2d(8, 16, 3, groups=2)
    bound = 1 / math.sqrt(4 * 9)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (16, 4, 3, 3) and np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.8 * bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.15 * bound
    t = nn.ConvTranspose2d(6, 4, 3, groups=2)
    assert tuple(t.weight.shape) == (6, 2, 3, 3)
    assert np.abs(t.bias.detach().numpy()).max() <= 1 / math.sqrt(2 * 9)


def _dd(*shape):
    return ember.tensor(np.random.default_rng(3).standard_normal(shape)).requires_grad_(True)


GRADGRAD = {
    "conv3d": (lambda x, w: F.conv3d(x, w, None, (2, 1, 1), 1, (1, 1, 2), 2),
               ((1, 2, 4, 3, 4), (2, 1, 2, 2, 2))),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w, None, 2, 1, 1, 1),
                         ((1, 2, 2, 2, 2), (2, 1, 2, 2, 2))),
    "conv2d": (lambda x, w: F.conv2d(x, w, None, 2, 1, 1, 2), ((1, 2, 5, 4), (2, 1, 2, 3))),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2),
                         ((1, 2, 3, 3), (2, 1, 2, 2))),
    "conv1d_dilated": (lambda x, w: F.conv1d(x, w, None, 1, 2, 2), ((1, 2, 6), (3, 2, 3))),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), ((1, 1, 4, 4),)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                          count_include_pad=False), ((1, 1, 5, 4),)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), ((1, 1, 5, 4),)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (2, 3)), ((1, 1, 5, 4),)),
    "pad_reflect": (lambda x: F.pad(x, (2, 1, 1, 0), "reflect"), ((1, 1, 3, 4),)),
    "unfold": (lambda x: F.unfold(x, 2, padding=1, stride=2), ((1, 2, 3, 3),)),
    "fold": (lambda x: F.fold(x, (3, 3), 2), ((1, 4, 4),)),
    "bilinear": (lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), ((1, 1, 3, 4),)),
    "nearest": (lambda x: F.interpolate(x, scale_factor=1.5), ((1, 1, 3, 2),)),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_gradgradcheck(name):
    fn, shapes = GRADGRAD[name]
    inputs = tuple(_dd(*s) for s in shapes)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_conv_double_backward_matches_torch():
    """d/dx of (d loss / d w): the weight-gradient op's own derivative, against torch."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((6, 2, 3, 2))
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ex, ew = (ember.tensor(a).requires_grad_(True) for a in (x, w))
    ty = torch.nn.functional.conv2d(tx, tw, None, (2, 1), 1, (1, 2), 2)
    ey = F.conv2d(ex, ew, None, (2, 1), 1, (1, 2), 2)
    tgw, = torch.autograd.grad((ty ** 2).sum(), tw, create_graph=True)
    egw, = ember.autograd.grad((ey ** 2).sum(), ew, create_graph=True)
    _close(egw, tgw, 1e-10, "first-order weight grad")
    t2 = torch.autograd.grad(tgw.sin().sum(), (tx, tw))
    e2 = ember.autograd.grad(egw.sin().sum(), (ex, ew))
    for a, b, what in zip(e2, t2, ("x", "w")):
        _close(a, b, 1e-9, f"second-order grad wrt {what}")


def test_nan_and_ties_in_max_pool():
    x = torch.tensor([[[[1.0, 3.0, 3.0, 0.0], [float("nan"), 2.0, 3.0, float("nan")],
                        [5.0, 5.0, float("-inf"), float("-inf")],
                        [5.0, 1.0, float("-inf"), float("-inf")]]]], dtype=torch.float64)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
               dict(kernel_size=2, stride=1)):
        tv, ti = torch.nn.functional.max_pool2d(x, return_indices=True, **kw)
        ev, ei = F.max_pool2d(_e(x), return_indices=True, **kw)
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        assert ei.tolist() == ti.tolist(), kw


def test_meta_shapes():
    x = ember.empty(2, 4, 9, 8, device="meta")
    w = ember.empty(6, 2, 3, 3, device="meta")
    assert F.conv2d(x, w, stride=2, groups=2).shape == (2, 6, 4, 3)
    assert F.conv_transpose2d(x, ember.empty(4, 3, 3, 3, device="meta"), stride=2).shape == \
        (2, 3, 19, 17)
    v, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    assert v.shape == (2, 4, 5, 5) and i.dtype == ember.int64
    assert F.pad(x, (1, 2, 3, 4), "reflect").shape == (2, 4, 16, 11)
    assert F.interpolate(x, scale_factor=2, mode="bilinear").shape == (2, 4, 18, 16)
    x3 = ember.empty(2, 4, 5, 9, 8, device="meta")
    assert F.conv3d(x3, ember.empty(6, 2, 3, 3, 3, device="meta"), stride=2, groups=2).shape \
        == (2, 6, 2, 4, 3)
    assert F.conv_transpose3d(x3, ember.empty(4, 3, 2, 3, 3, device="meta"), stride=2,
                              output_padding=1).shape == (2, 3, 11, 20, 18)
    assert F.conv3d(x3[0], ember.empty(3, 4, 2, 2, 2, device="meta"), padding="same").shape == \
        (3, 5, 9, 8)
