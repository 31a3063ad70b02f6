"""Oracle tests of ``grid_sample`` and ``affine_grid`` against torch.

Every mode x padding x align_corners combination in float64 and float32 on non-contiguous
inputs and grids (values, input and grid gradients with a random cotangent), grids with points
far outside [-1, 1] and on the half-pixel lattice (nearest's round-half-to-even, border kinks),
non-finite and huge coordinates, unit and empty sizes, 5-D input, warnings and errors.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.nn._oracle import close, to_ember

PADDINGS = ["zeros", "border", "reflection"]
DTYPES = [torch.float64, torch.float32]
# (values and input grads, grid and theta grads): float32 grid grads sum many products
TOL = {torch.float64: (1e-12, 1e-11), torch.float32: (1e-5, 1e-4)}


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _grid_values(shape: tuple, seed: int, dtype) -> torch.Tensor:
    """Mostly inside [-1.2, 1.2]; every 3rd point on the 1/4 lattice (exact half-pixel and
    border positions), every 5th far outside (|g| up to 9)."""
    g = torch.rand(shape, generator=_g(seed), dtype=torch.float64) * 2.4 - 1.2
    flat = g.view(-1)
    flat[::3] = torch.round(flat[::3] * 4) / 4
    flat[1::5] = torch.rand(flat[1::5].shape, generator=_g(seed + 1), dtype=torch.float64) * 18 - 9
    flat[2] = 1.0
    return g.to(dtype)


def _noncontig_input(shape: tuple, seed: int, dtype) -> torch.Tensor:
    """A leaf whose permuted view has ``shape`` (N, C, *S): channels last, spatial reversed."""
    n, c, *spatial = shape
    return torch.randn((n, *spatial[::-1], c), generator=_g(seed), dtype=dtype)


def _input_view(base):
    nd = base.dim() - 2  # base (N, *S reversed, C) -> (N, C, *S)
    return base.permute(0, nd + 1, *range(nd, 0, -1))


def _noncontig_grid(values: torch.Tensor) -> torch.Tensor:
    """A leaf whose view (:func:`_grid_view`) equals ``values``: coordinates first, output
    dims reversed and the first output dim every other row."""
    n, *out, d = values.shape
    base = torch.zeros((n, d, *out[:0:-1], 2 * out[0]), dtype=values.dtype)
    with torch.no_grad():
        _grid_view(base).copy_(values)
    return base


def _grid_view(base):
    nd = base.dim() - 2
    return base.permute(0, *range(nd + 1, 1, -1), 1)[:, ::2]


def _leaf_pair(t: torch.Tensor):
    return t.detach().clone().requires_grad_(True), to_ember(t, True)


def _check_sampling(in_shape, grid_shape, mode, padding, align, dtype, seed=0):
    tol, grid_tol = TOL[dtype]
    ti, ei = _leaf_pair(_noncontig_input(in_shape, seed, dtype))
    tg, eg = _leaf_pair(_noncontig_grid(_grid_values(grid_shape, seed + 1, dtype)))
    args = {"mode": mode, "padding_mode": padding, "align_corners": align}
    assert not _grid_view(eg).is_contiguous()
    assert min(in_shape[2:]) == 1 or not _input_view(ei).is_contiguous()
    t_out = TF.grid_sample(_input_view(ti), _grid_view(tg), **args)
    e_out = F.grid_sample(_input_view(ei), _grid_view(eg), **args)
    assert e_out.dtype == to_ember(t_out).dtype
    close(e_out, t_out, tol, tol, "output")
    cot = torch.randn(t_out.shape, generator=_g(seed + 2), dtype=dtype)
    (t_out * cot).sum().backward()
    (e_out * to_ember(cot)).sum().backward()
    close(ei.grad, ti.grad, tol, tol, "input grad")
    assert eg.grad is not None  # torch gives zeros, not None, in nearest mode
    close(eg.grad, tg.grad, grid_tol, grid_tol, "grid grad")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode, padding, align, dtype):
    _check_sampling((2, 3, 4, 5), (2, 3, 4, 2), mode, padding, align, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, padding, align, dtype):
    _check_sampling((2, 2, 3, 4, 5), (2, 2, 3, 4, 3), mode, padding, align, dtype)


@pytest.mark.parametrize("in_shape", [(1, 2, 1, 4), (1, 2, 3, 1), (1, 2, 1, 1),
                                      (1, 2, 1, 1, 3), (1, 1, 2, 1, 1)])
def test_unit_spatial_sizes(in_shape):
    """Size-1 dims: reflection with align_corners has an empty span (coordinate 0, no grad)."""
    grid_shape = (1, 3, 2, 2) if len(in_shape) == 4 else (1, 2, 3, 2, 3)
    modes = ["bilinear", "nearest"] + (["bicubic"] if len(in_shape) == 4 else [])
    for mode in modes:
        for padding in PADDINGS:
            for align in (False, True):
                _check_sampling(in_shape, grid_shape, mode, padding, align, torch.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("align", [False, True])
def test_nearest_rounds_half_to_even(align, dtype):
    """Grid points whose pixel coordinate is exactly k + 0.5 pick the even neighbour."""
    for shape in [(1, 1, 4, 6), (1, 1, 5, 7), (1, 1, 3, 4, 6)]:
        spatial = shape[2:]
        cols = []
        for s in spatial[::-1]:  # x, y[, z]: pixel coordinates -0.5, 0.5, ..., s - 0.5
            pix = torch.arange(-0.5, s, 1.0, dtype=torch.float64)
            g = pix * 2 / (s - 1) - 1 if align else (2 * pix + 1) / s - 1
            cols.append(g)
        mesh = torch.stack(torch.meshgrid(*cols, indexing="xy"), -1) if len(cols) == 2 else \
            torch.stack(torch.meshgrid(*cols, indexing="ij"), -1).permute(2, 1, 0, 3)
        grid = mesh.unsqueeze(0).to(dtype)
        inp = torch.arange(float(np.prod(shape)), dtype=dtype).view(shape)
        for padding in PADDINGS:
            t = TF.grid_sample(inp, grid, "nearest", padding, align)
            e = F.grid_sample(to_ember(inp), to_ember(grid), "nearest", padding, align)
            np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_finite_and_huge_points(dtype):
    """NaN, +-inf and coordinates beyond int range: the fused 4-D and scalar 5-D kernels of
    torch treat them differently; both are followed."""
    nan, inf = float("nan"), float("inf")
    pts = torch.tensor([[nan, 0.0], [inf, 0.0], [-inf, 0.0], [0.0, nan], [1e20, 0.0],
                        [-1e20, 0.3], [0.2, -3e9], [0.2, 7.1e7], [1.3e5, -2.7e6]], dtype=dtype)
    inp = torch.arange(1.0, 13.0, dtype=dtype).view(1, 1, 3, 4)
    cases = [(inp, pts.view(1, 1, -1, 2), ["bilinear", "nearest", "bicubic"]),
             (inp.unsqueeze(2).expand(1, 1, 2, 3, 4),
              torch.cat([pts, torch.zeros(9, 1, dtype=dtype)], 1).view(1, 1, 1, -1, 3),
              ["bilinear", "nearest"])]
    for x, grid, modes in cases:
        for mode in modes:
            for padding in PADDINGS:
                for align in (False, True):
                    t = TF.grid_sample(x, grid, mode, padding, align)
                    e = F.grid_sample(to_ember(x), to_ember(grid), mode, padding, align)
                    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6,
                                               err_msg=f"{mode} {padding} {align}")


@pytest.mark.parametrize("in_shape,grid_shape", [
    ((0, 3, 4, 5), (0, 3, 3, 2)), ((2, 0, 4, 5), (2, 3, 3, 2)), ((2, 3, 4, 5), (2, 0, 3, 2)),
    ((2, 3, 2, 4, 5), (2, 0, 3, 1, 3))])
def test_empty_shapes(in_shape, grid_shape):
    t = TF.grid_sample(torch.ones(in_shape), torch.zeros(grid_shape), align_corners=False)
    e = F.grid_sample(ember.ones(in_shape), ember.zeros(grid_shape), align_corners=False)
    assert tuple(e.shape) == tuple(t.shape)


def test_identity_grid_reproduces_input():
    x = torch.randn(2, 3, 4, 5, generator=_g(5), dtype=torch.float64)
    theta = torch.eye(2, 3, dtype=torch.float64).expand(2, 2, 3)
    for align in (False, True):
        grid = F.affine_grid(to_ember(theta), (2, 3, 4, 5), align_corners=align)
        out = F.grid_sample(to_ember(x), grid, align_corners=align)
        close(out, x, 1e-12, 1e-12, "identity")


# -- warnings and errors ----------------------------------------------------------------------
def _sample(lib, F_, in_shape, grid_shape, dtype=None, grid_dtype=None, **kw):
    x = lib.ones(in_shape, dtype=dtype or lib.float32)
    g = lib.zeros(grid_shape, dtype=grid_dtype or dtype or lib.float32)
    return F_.grid_sample(x, g, **{"align_corners": False, **kw})


_SAMPLE_ERRORS = [
    ({"mode": "area"}, ValueError, r"expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
    ({"padding_mode": "circular"}, ValueError, r"expected padding_mode to be 'zeros'"),
    ({"grid_shape": (1, 3, 3, 2)}, RuntimeError, r"same batch size"),
    ({"grid_shape": (2, 3, 3, 3)}, RuntimeError, r"size 2 in last dimension"),
    ({"in_shape": (2, 3, 4, 5, 2), "grid_shape": (2, 3, 3, 2, 3), "mode": "bicubic"},
     RuntimeError, r"bicubic interpolation only supports 4D input"),
    ({"grid_shape": (2, 3, 3, 2, 2)}, RuntimeError, r"expected 4D input and grid"),
    ({"in_shape": (2, 3, 4), "grid_shape": (2, 3, 1)}, RuntimeError, r"expected 5D input"),
    ({"in_shape": (3, 4, 5), "grid_shape": (3, 3, 2)}, RuntimeError, r"size 1 in last dim"),
    ({"in_shape": (2, 3, 0, 5)}, RuntimeError, r"non-empty spatial dimensions"),
    ({"dtype": "float32", "grid_dtype": "float64"}, RuntimeError, r"expected scalar type"),
    ({"dtype": "int64"}, NotImplementedError, r"not implemented"),
]


@pytest.mark.parametrize("kw,exc,pattern", _SAMPLE_ERRORS)
def test_grid_sample_errors(kw, exc, pattern):
    kw = {"in_shape": (2, 3, 4, 5), "grid_shape": (2, 3, 3, 2), **kw}
    for lib, F_ in ((torch, TF), (ember, F)):
        args = {k: getattr(lib, v) if k.endswith("dtype") else v for k, v in kw.items()}
        with pytest.raises(exc) as info:
            _sample(lib, F_, **args)
        if lib is ember:
            assert re.search(pattern, str(info.value)), str(info.value)


_AFFINE_ERRORS = [
    ((2, 3, 4), (2, 3, 4, 5), ValueError, r"2D affine matrices of shape Nx2x3"),
    ((2, 2, 3), (2, 3, 4, 5, 6), ValueError, r"3D affine matrices of shape Nx3x4"),
    ((2, 3), (2, 3, 4, 5), ValueError, r"2D affine matrices"),
    ((2, 2, 3), (2, 3, 4), NotImplementedError, r"only supports 4D and 5D sizes"),
    ((2, 2, 3), (2, 3, 0, 5), ValueError, r"non-zero, positive output size"),
    ((2, 2, 3), (2, 0, 4, 5), ValueError, r"non-zero, positive output size"),
    ((2, 2, 3), (3, 3, 4, 5), RuntimeError, r"one affine matrix per batch element"),
]


@pytest.mark.parametrize("theta_shape,size,exc,pattern", _AFFINE_ERRORS)
def test_affine_grid_errors(theta_shape, size, exc, pattern):
    for lib, F_ in ((torch, TF), (ember, F)):
        with pytest.raises(exc) as info:
            F_.affine_grid(lib.zeros(theta_shape), size, align_corners=False)
        if lib is ember:
            assert re.search(pattern, str(info.value)), str(info.value)
    for lib, F_ in ((torch, TF), (ember, F)):
        with pytest.raises(ValueError, match="floating point type"):
            F_.affine_grid(lib.zeros((2, 2, 3), dtype=lib.int64), (2, 3, 4, 5), False)


def _warning_texts(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("call", [
    lambda lib, F_: F_.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 1, 2)),
    lambda lib, F_: F_.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2)),
    lambda lib, F_: F_.affine_grid(lib.zeros(1, 2, 3), (1, 1, 1, 3), align_corners=True),
    lambda lib, F_: F_.affine_grid(lib.zeros(1, 3, 4), (1, 1, 2, 1, 3), align_corners=True),
    lambda lib, F_: F_.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 1, 2), "nearest",
                                   "border", True),
    lambda lib, F_: F_.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2), align_corners=False),
])
def test_warnings_match_torch(call):
    assert _warning_texts(lambda: call(ember, F)) == _warning_texts(lambda: call(torch, TF))


# -- affine_grid ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (3, 1, 1, 6), (2, 2, 3, 4, 5), (1, 1, 2, 1, 3)])
def test_affine_grid(size, align, dtype):
    tol, theta_tol = TOL[dtype]
    rows = len(size) - 2
    # a leaf (N, cols, rows) whose transpose is the non-contiguous theta (N, rows, cols)
    base = torch.randn(size[0], rows + 1, rows, generator=_g(3), dtype=dtype)
    tb, eb = _leaf_pair(base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn in both
        t = TF.affine_grid(tb.transpose(1, 2), size, align_corners=align)
        e = F.affine_grid(eb.transpose(1, 2), ember.Size(size), align_corners=align)
    assert e.dtype == to_ember(t).dtype
    close(e, t, tol, tol, "grid")
    cot = torch.randn(t.shape, generator=_g(4), dtype=dtype)
    (t * cot).sum().backward()
    (e * to_ember(cot)).sum().backward()
    close(eb.grad, tb.grad, theta_tol, theta_tol, "theta grad")


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("bicubic", "reflection"),
                                          ("bilinear", "border")])
@pytest.mark.parametrize("nd", [2, 3])
def test_spatial_transformer_chain(nd, mode, padding):
    """theta -> affine_grid -> grid_sample: gradients reach theta and the image."""
    if nd == 3 and mode == "bicubic":
        mode = "nearest"
    size = (2, 3, 4, 5) if nd == 2 else (2, 2, 3, 4, 5)
    img = torch.randn(size, generator=_g(6), dtype=torch.float64)
    theta = torch.eye(nd, nd + 1, dtype=torch.float64) * 1.3 + \
        0.4 * torch.randn(2, nd, nd + 1, generator=_g(7), dtype=torch.float64)
    (ti, ei), (tt, et) = _leaf_pair(img), _leaf_pair(theta)
    out_size = size[:2] + tuple(s + 1 for s in size[2:])
    t = TF.grid_sample(ti, TF.affine_grid(tt, out_size, False), mode, padding, False)
    e = F.grid_sample(ei, F.affine_grid(et, out_size, False), mode, padding, False)
    close(e, t, 1e-12, 1e-12, "output")
    cot = torch.randn(t.shape, generator=_g(8), dtype=torch.float64)
    (t * cot).sum().backward()
    (e * to_ember(cot)).sum().backward()
    close(ei.grad, ti.grad, 1e-12, 1e-12, "image grad")
    close(et.grad, tt.grad, 1e-11, 1e-11, "theta grad")
