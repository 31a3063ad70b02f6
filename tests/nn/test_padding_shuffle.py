"""Oracle tests of the padding layers, the pixel / channel shuffles, local response
normalisation, ``pdist`` and the distance layers against torch.

Each case runs the same layer or function in ember and torch on the same values laid out three
ways (contiguous, permuted, strided), in float32 and float64, and compares outputs and input
gradients under a random cotangent; reprs and error types / messages are compared too.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn._oracle import close, to_ember

tnn = torch.nn
DTYPES = [torch.float32, torch.float64]
LAYOUTS = ["contiguous", "permuted", "strided"]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _leaf(shape: tuple, layout: str, dtype, seed: int) -> torch.Tensor:
    """A leaf whose view (:func:`_view`) has ``shape``: reversed dims (permuted) or every other
    element of the last dim (strided)."""
    if layout == "permuted":
        shape = shape[::-1]
    elif layout == "strided":
        shape = (*shape[:-1], 2 * shape[-1]) if shape else shape
    return torch.randn(shape, generator=_g(seed), dtype=dtype)


def _view(x, layout: str):
    if layout == "permuted" and x.dim():
        return x.permute(*range(x.dim() - 1, -1, -1))
    if layout == "strided" and x.dim():
        return x[..., ::2]
    return x


def check(t_fn, e_fn, shapes, layout="contiguous", dtype=torch.float64, seed=0, tol=None,
          grad=True):
    """Run ``t_fn`` / ``e_fn`` on the same inputs (views of fresh leaves), compare the outputs,
    then the leaves' gradients under a random cotangent."""
    tol = TOL[dtype] if tol is None else tol
    bases = [_leaf(tuple(s), layout, dtype, seed + i) for i, s in enumerate(shapes)]
    t_leaves = [b.clone().requires_grad_(grad) for b in bases]
    e_leaves = [to_ember(b, grad) for b in bases]
    t_out = t_fn(*[_view(x, layout) for x in t_leaves])
    e_out = e_fn(*[_view(x, layout) for x in e_leaves])
    assert e_out.dtype == getattr(ember, str(t_out.dtype).split(".")[1])
    close(e_out, t_out, tol, tol, "output")
    if not grad:
        return e_out, t_out
    cot = torch.randn(t_out.shape, generator=_g(seed + 100), dtype=dtype)
    (t_out * cot).sum().backward()
    (e_out * to_ember(cot)).sum().backward()
    for i, (e, t) in enumerate(zip(e_leaves, t_leaves)):
        close(e.grad, t.grad, tol, tol, f"grad of input {i}")
    return e_out, t_out


def check_error(t_fn, e_fn, pattern: str | None = None):
    """Both raise the same exception type; ember's message matches ``pattern`` (default:
    torch's message, exactly)."""
    with pytest.raises(Exception) as t_info:
        t_fn()
    with pytest.raises(Exception) as e_info:
        e_fn()
    assert isinstance(e_info.value, type(t_info.value)), (t_info.value, e_info.value)
    pattern = re.escape(str(t_info.value)) if pattern is None else pattern
    assert re.search(pattern, str(e_info.value)), (str(e_info.value), pattern)


# -- padding layers ---------------------------------------------------------------------------
# (name, padded dims, extra constructor args)
PAD_LAYERS = [(f"{kind}Pad{d}d", d, (1.5,) if kind == "Constant" else ())
              for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
              for d in (1, 2, 3)]
SPATIAL = (4, 5, 6)
PAD_FORMS = {
    "int": lambda d: 2,
    "tuple": lambda d: (3, 1, 0, 2, 2, 1)[:2 * d],
    "list": lambda d: [1, 0, 2, 3, 0, 1][:2 * d],
    "negative": lambda d: (-1, 2, 1, -2, 2, -1)[:2 * d],
}


def _pad_pair(name: str, padding, extra: tuple):
    return getattr(tnn, name)(padding, *extra), getattr(nn, name)(padding, *extra)


@pytest.mark.parametrize("form", list(PAD_FORMS))
@pytest.mark.parametrize("name,d,extra", PAD_LAYERS, ids=[p[0] for p in PAD_LAYERS])
def test_padding_layers(name, d, extra, form):
    tm, em = _pad_pair(name, PAD_FORMS[form](d), extra)
    assert em.padding == tm.padding
    for batched in (False, True):
        shape = (2, 3)[1 - batched:] + SPATIAL[:d]
        for dtype in DTYPES:
            for layout in LAYOUTS:
                check(tm, em, [shape], layout, dtype)


@pytest.mark.parametrize("name,shape", [("ZeroPad2d", (5, 6)), ("ConstantPad1d", (7,)),
                                        ("ZeroPad1d", (2, 2, 2, 3, 4)),
                                        ("ConstantPad3d", (2, 2, 2, 3, 4, 3))])
def test_constant_padding_any_leading_dims(name, shape):
    extra = (-0.5,) if name.startswith("Constant") else ()
    tm, em = _pad_pair(name, 1, extra)
    check(tm, em, [shape], "permuted")


def test_padding_layers_keep_torch_class_relations():
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d)
    assert nn.ZeroPad1d(1).value == 0.0 and nn.ConstantPad3d(1, 2).value == 2
    assert nn.ZeroPad1d((1, 2, 3)).padding == (1, 2, 3)  # checked at call time, as torch


REPRS = [
    ("ZeroPad1d", (2,)), ("ZeroPad2d", ((1, 2, 3, 4),)), ("ZeroPad3d", (1,)),
    ("ConstantPad1d", ((1, 2), 2)), ("ConstantPad2d", (1, 0)), ("ConstantPad3d", (1, 3.5)),
    ("ReflectionPad1d", ([1, 2],)), ("ReflectionPad2d", (2,)), ("ReflectionPad3d", (1,)),
    ("ReplicationPad1d", (1,)), ("ReplicationPad2d", ((0, 1, 2, 3),)),
    ("ReplicationPad3d", ((1, 2, 3, 4, 5, 6),)), ("CircularPad1d", (3,)),
    ("CircularPad2d", ((1, -1, 2, 0),)), ("CircularPad3d", (2,)),
    ("PixelShuffle", (2,)), ("PixelUnshuffle", (3,)), ("ChannelShuffle", (2,)),
    ("LocalResponseNorm", (3,)), ("LocalResponseNorm", (2, 1e-3, 0.5, 2)),
    ("PairwiseDistance", ()), ("PairwiseDistance", (1.0, 1e-3, True)),
    ("CosineSimilarity", ()), ("CosineSimilarity", (0, 1e-6)),
]


@pytest.mark.parametrize("name,args", REPRS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REPRS)])
def test_reprs(name, args):
    assert repr(getattr(nn, name)(*args)) == repr(getattr(tnn, name)(*args))


_SUPPORTED = re.escape("Supported combinations for non-constant padding")
PAD_ERRORS = [
    ("ZeroPad1d", (1, 2, 3), (2, 3), "Padding length must be divisible by 2"),
    ("ZeroPad1d", 1.5, (2, 3), None),
    ("ReflectionPad2d", (1, 2.0, 1, 1), (1, 3, 3), "tuple of ints"),
    ("ZeroPad3d", 1, (3,), "Padding length should be less than or equal to two times the input "
                           "dimension but got padding length 6 and input of dimension 1"),
    ("ReflectionPad1d", 3, (2, 3), re.escape("Padding size should be less than the "
                                             "corresponding input dimension, but got: padding "
                                             "(3, 3) at dimension 1 of input [2, 3]")),
    ("ReflectionPad1d", 1, (3,), "Padding size 2 is not supported for 1D input tensor"),
    ("ReflectionPad1d", 1, (1, 2, 3, 4), "Padding size 2 is not supported for 4D input tensor"),
    ("ReflectionPad2d", 1, (3, 4), _SUPPORTED),
    ("ReplicationPad2d", 1, (1, 2, 3, 4, 5), _SUPPORTED),
    ("ReplicationPad3d", 1, (2, 3, 4), _SUPPORTED),
    ("ReflectionPad1d", 1, (2, 0), re.escape("Expected 2D or 3D (batch mode) tensor with "
                                             "possibly 0 batch size and other non-zero "
                                             "dimensions for input, but got: [2, 0]")),
    ("CircularPad1d", 1, (3,), None),
    ("CircularPad2d", 1, (1, 2, 3, 4, 5), None),
    ("CircularPad3d", 1, (3, 4, 5), None),
    ("CircularPad1d", 4, (2, 3), None),
]


@pytest.mark.parametrize("name,padding,shape,pattern", PAD_ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(PAD_ERRORS)])
def test_padding_errors(name, padding, shape, pattern):
    tm, em = _pad_pair(name, padding, ())
    x = torch.randn(shape, generator=_g(0))
    check_error(lambda: tm(x), lambda: em(to_ember(x)), pattern)


def test_negative_padding_past_the_input_raises():
    x = torch.randn(2, 5, generator=_g(0))
    for layer in ("ReplicationPad1d", "ZeroPad1d"):
        tm, em = _pad_pair(layer, -3, ())
        check_error(lambda: tm(x), lambda: em(to_ember(x)), "negative|too small")  # noqa: B023


def test_constant_padding_empty_batch():
    tm, em = _pad_pair("ReflectionPad1d", 1, ())
    check(tm, em, [(0, 2, 4)])


# -- pixel shuffle / unshuffle ----------------------------------------------------------------
SHUFFLE_SHAPES = [(2, 8, 3, 4), (18, 2, 3), (2, 3, 4, 5, 3), (1, 1, 1)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHUFFLE_SHAPES, ids=str)
def test_pixel_shuffle(shape, dtype, layout):
    for r in (1, 2, 3):
        if shape[-3] % (r * r) == 0:
            check(tnn.PixelShuffle(r), nn.PixelShuffle(r), [shape], layout, dtype)
            check(lambda x: TF.pixel_shuffle(x, r), lambda x: F.pixel_shuffle(x, r),  # noqa: B023
                  [shape], layout, dtype, seed=1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 2, 6, 4), (3, 6, 6), (2, 3, 2, 4, 6)],
                         ids=str)
def test_pixel_unshuffle(shape, dtype, layout):
    for r in (1, 2, 3):
        if shape[-1] % r == 0 and shape[-2] % r == 0:
            check(tnn.PixelUnshuffle(r), nn.PixelUnshuffle(r), [shape], layout, dtype)
            check(lambda x: TF.pixel_unshuffle(x, r), lambda x: F.pixel_unshuffle(x, r),  # noqa: B023
                  [shape], layout, dtype, seed=1)


def test_pixel_shuffle_empty_batch():
    # torch's pixel_unshuffle returns a clone of an empty input, shape unchanged (ember does
    # the same), so torch's pixel_shuffle backward fails on an empty batch; ember's (a
    # composite of views) gives the input's shape
    x = torch.zeros(0, 4, 2, 3)
    check(tnn.PixelShuffle(2), nn.PixelShuffle(2), [(0, 4, 2, 3)], grad=False)
    e = to_ember(x, True)
    out = F.pixel_shuffle(e, 2)
    out.sum().backward()
    assert tuple(e.grad.shape) == (0, 4, 2, 3)
    assert tuple(F.pixel_unshuffle(ember.zeros(0, 1, 6, 6), 3).shape) == (0, 1, 6, 6)
    assert tuple(TF.pixel_unshuffle(torch.zeros(0, 1, 6, 6), 3).shape) == (0, 1, 6, 6)


def test_pixel_shuffle_roundtrip_and_integer_dtype():
    x = torch.arange(2 * 18 * 2 * 3).view(2, 18, 2, 3)
    e = F.pixel_shuffle(ember.tensor(x.numpy()), 3)
    close(e, TF.pixel_shuffle(x, 3))
    close(F.pixel_unshuffle(e, 3), x)


SHUFFLE_ERRORS = [
    (lambda m: m.pixel_shuffle(m.zeros(4, 4), 2), None),
    (lambda m: m.pixel_shuffle(m.zeros(5, 4, 4), 2), None),
    (lambda m: m.pixel_shuffle(m.zeros(4, 4, 4), 0), None),
    (lambda m: m.pixel_shuffle(m.zeros(4, 4, 4), -2), None),
    (lambda m: m.pixel_shuffle(m.zeros(4, 4, 4), 2.0), "must be int, not float"),
    (lambda m: m.pixel_unshuffle(m.zeros(4, 4), 2), None),
    (lambda m: m.pixel_unshuffle(m.zeros(1, 5, 4), 2), None),
    (lambda m: m.pixel_unshuffle(m.zeros(1, 4, 5), 2), None),
    (lambda m: m.pixel_unshuffle(m.zeros(1, 4, 4), 0), None),
    (lambda m: m.pixel_unshuffle(m.zeros(1, 4, 4), -1), None),
    (lambda m: m.channel_shuffle(m.zeros(4, 4), 2), None),
    (lambda m: m.channel_shuffle(m.zeros(4), 2), None),
    (lambda m: m.channel_shuffle(m.zeros(2, 4, 3), 0), None),
    (lambda m: m.channel_shuffle(m.zeros(2, 4, 3), -2), None),
    (lambda m: m.channel_shuffle(m.zeros(2, 5, 3), 2), None),
    (lambda m: m.local_response_norm(m.zeros(2, 3), 2),
     r"Expected 3D or higher dimensionality\s+input \(got 2 dimensions\)"),
    (lambda m: m.pdist(m.zeros(3, 4, 2)), None),
    (lambda m: m.pdist(m.zeros(3, 4, dtype=m.int64)), None),
    (lambda m: m.pdist(m.zeros(3, 4), -1), None),
]


class _NS:
    """``torch`` / ``ember`` plus their functional namespace, for one lambda over both."""

    def __init__(self, lib, functional):
        self.lib, self.functional = lib, functional

    def __getattr__(self, name):
        return getattr(self.functional, name, None) or getattr(self.lib, name)


@pytest.mark.parametrize("fn,pattern", SHUFFLE_ERRORS, ids=[str(i) for i in
                                                            range(len(SHUFFLE_ERRORS))])
def test_functional_errors(fn, pattern):
    check_error(lambda: fn(_NS(torch, TF)), lambda: fn(_NS(ember, F)), pattern)


# -- channel shuffle --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 6, 3), (3, 12, 2, 3), (2, 6, 2, 3, 2), (0, 6, 2)],
                         ids=str)
def test_channel_shuffle(shape, dtype, layout):
    for groups in (1, 2, 3, 6):
        check(tnn.ChannelShuffle(groups), nn.ChannelShuffle(groups), [shape], layout, dtype)
        check(lambda x: TF.channel_shuffle(x, groups),  # noqa: B023
              lambda x: F.channel_shuffle(x, groups), [shape], layout, dtype, seed=1)  # noqa: B023


# -- local response norm ----------------------------------------------------------------------
LRN_ARGS = [(1,), (2,), (3, 1e-2, 0.5, 2.0), (5, 0.3, 0.75, 1.0), (8, 1.0, 1.5, 0.5)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 5, 3, 4), (2, 4, 2, 3, 3)], ids=str)
def test_local_response_norm(shape, dtype, layout):
    # torch views its squared input as (N, 1, C, D, -1), which fails on some permuted 5-d
    # inputs; its reference then runs on a contiguous copy (same values, same gradients)
    fix = (lambda x: x.contiguous()) if len(shape) == 5 else (lambda x: x)
    for args in LRN_ARGS:
        tm = tnn.LocalResponseNorm(*args)
        check(lambda x: tm(fix(x)), nn.LocalResponseNorm(*args), [shape], layout,  # noqa: B023
              dtype)
        check(lambda x: TF.local_response_norm(fix(x), *args),  # noqa: B023
              lambda x: F.local_response_norm(x, *args), [shape], layout, dtype)  # noqa: B023


def test_local_response_norm_empty_input_is_returned():
    x = ember.zeros(0, 3, 4)
    assert nn.LocalResponseNorm(2)(x) is x


# -- pdist ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")], ids=str)
def test_pdist(p, dtype, layout):
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    check(lambda x: TF.pdist(x, p), lambda x: F.pdist(x, p), [(5, 3)], layout, dtype, tol=tol)


def test_pdist_small_and_repeated_rows():
    for shape in [(1, 3), (3, 0)]:
        check(TF.pdist, F.pdist, [shape])
    check(TF.pdist, F.pdist, [(0, 3)], grad=False)  # torch's backward crashes on 0 rows
    x = ember.zeros(0, 3, requires_grad=True)
    F.pdist(x).sum().backward()
    assert tuple(x.grad.shape) == (0, 3)
    base = torch.randn(3, 4, generator=_g(0), dtype=torch.float64)
    rows = base[[0, 1, 0, 2]]  # rows 0 and 2 equal: a zero distance has a zero gradient
    t_leaf = rows.clone().requires_grad_()
    e_leaf = to_ember(rows, True)
    t_out, e_out = TF.pdist(t_leaf), F.pdist(e_leaf)
    close(e_out, t_out)
    cot = torch.randn(t_out.shape, generator=_g(1), dtype=torch.float64)
    (t_out * cot).sum().backward()
    (e_out * to_ember(cot)).sum().backward()
    close(e_leaf.grad, t_leaf.grad)


# -- distance layers --------------------------------------------------------------------------
PAIRWISE = [((), [(4, 5), (4, 5)]), ((1.0,), [(4, 5), (1, 5)]), ((3.0, 1e-3, True), [(4, 5),
                                                                                    (4, 5)]),
            ((float("inf"),), [(3, 4), (3, 4)]), ((2.0, 1e-6, True), [(5,), (5,)]),
            ((), [(5,), (5,)]), ((0.5,), [(2, 3, 4), (3, 4)]), ((), [(), ()]),
            ((2.0, 1e-6, True), [(4,), (3, 4)]), ((1.0, 1e-6, True), [(2, 1, 4), (3, 4)]),
            ((), [(0, 4), (0, 4)])]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("args,shapes", PAIRWISE, ids=[str(i) for i in range(len(PAIRWISE))])
def test_pairwise_distance(args, shapes, dtype, layout):
    check(tnn.PairwiseDistance(*args), nn.PairwiseDistance(*args), shapes, layout, dtype)


COSINE = [((), [(4, 5), (4, 5)]), ((0,), [(4, 5), (4, 1)]), ((-1, 1e-6), [(2, 3, 4), (3, 4)]),
          ((1, 0.5), [(3, 2, 4), (3, 2, 4)]), ((0,), [(4,), (4,)]), ((-1,), [(4,), (3, 4)]),
          ((), [(2, 0), (2, 0)])]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("args,shapes", COSINE, ids=[str(i) for i in range(len(COSINE))])
def test_cosine_similarity(args, shapes, dtype, layout):
    check(tnn.CosineSimilarity(*args), nn.CosineSimilarity(*args), shapes, layout, dtype)


def test_distance_shape_mismatch_errors():
    a, b = torch.randn(3, 4, generator=_g(0)), torch.randn(3, 5, generator=_g(1))
    for name in ("PairwiseDistance", "CosineSimilarity"):
        tm, em = getattr(tnn, name)(), getattr(nn, name)()
        check_error(lambda: tm(a, b), lambda: em(to_ember(a), to_ember(b)),  # noqa: B023
                    "must match|broadcast")


def test_public_names():
    import ember.nn.functional.vision as vision
    import ember.nn.modules.distance as distance
    import ember.nn.modules.padding as padding
    import ember.nn.modules.pixelshuffle as pixelshuffle

    assert sorted(padding.__all__) == sorted(n for n, _, _ in PAD_LAYERS)
    assert set(pixelshuffle.__all__) == {"PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
                                         "LocalResponseNorm"}
    assert set(distance.__all__) == {"PairwiseDistance", "CosineSimilarity"}
    for name in vision.__all__:
        assert getattr(F, name) is getattr(vision, name) and hasattr(TF, name)
    assert np.isfinite(F.pdist(ember.ones(2, 2)).numpy()).all()
