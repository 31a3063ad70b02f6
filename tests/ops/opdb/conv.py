"""Op-table entries: convolution, pooling, unpooling, padding, im2col/col2im and resampling.

Each entry calls ember's operator (``ember.ops.conv`` / ``ember.ops.pooling``, or the
``nn.functional`` form for composites such as LP pooling, unpooling and fractional pooling)
and torch's ``nn.functional`` counterpart on the same hostile inputs: permuted, strided, offset
and expanded (stride-0) inputs and weights, unbatched inputs, zero-size batches, groups,
dilation, stride, padding strings, ceil mode; 1-3 spatial dims. Gradients (float64 samples) and
gradcheck run through the shared op-table tests; double backward through
tests/nn/test_conv_modules.py and tests/nn/test_pooling_modules.py.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
import ember.ops.conv as C
import ember.ops.pooling as P
from tests.opinfo import COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput, make

LAYOUTS = ("contiguous", "permuted", "strided", "offset", "expanded")
# torch rounds half-precision partial sums; ember accumulates in float32 and rounds once
TOL = {"float16": (5e-3, 2e-2), "bfloat16": (3e-2, 1.5e-1), "float32": (1e-5, 1e-5),
       "float64": (1e-10, 1e-10), "complex64": (1e-5, 1e-5), "complex128": (1e-10, 1e-10)}
WEIGHT_LAYOUT = {"contiguous": "contiguous", "permuted": "strided", "strided": "permuted",
                 "offset": "offset", "expanded": "contiguous"}


def _layout(i: int, n: int, layouts=LAYOUTS) -> str:
    """Layout of case ``i`` of ``n``; the last (smallest, gradcheck-sized) case is never
    expanded, since finite differences cannot perturb one element of a stride-0 tensor."""
    return layouts[i % len(layouts)] if i < n - 1 else "strided"


def _is_torch(lib) -> bool:
    return lib is torch


def _F(lib):
    return TF if _is_torch(lib) else C


def _P(lib):
    return TF if _is_torch(lib) else P


def _NF(lib):
    return TF if _is_torch(lib) else EF


def _conv_cases(nd: int):
    """(input shape, weight shape, bias?, kwargs) for conv{nd}d."""
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]
    k = {1: (3,), 2: (3, 2), 3: (3, 2, 2)}[nd]
    one = (1,) * nd
    return [
        ((2, 4) + sp, (6, 4) + k, True, {}),
        ((2, 4) + sp, (6, 2) + k, True, {"groups": 2, "stride": 2, "padding": 1}),
        ((2, 4) + sp, (4, 1) + k, False, {"groups": 4, "dilation": 2, "padding": (1,) * nd}),
        ((2, 4) + sp, (6, 4) + k, True, {"padding": "same", "dilation": 2}),
        ((2, 4) + sp, (6, 4) + k, False, {"padding": "valid", "stride": (2,) * nd}),
        ((4,) + sp, (3, 4) + k, True, {"padding": 1}),              # unbatched
        ((0, 4) + sp, (3, 4) + k, True, {}),                        # empty batch
        ((2, 0) + sp, (3, 0) + k, True, {}),            # no input channels: (N, 0, *out)
        ((2, 0) + sp, (4, 0) + k, False, {"groups": 2, "stride": 2}),
        ((1, 2) + (4,) * nd, (2, 2) + (2,) * nd, True, {"stride": one}),  # gradcheck-sized
    ]


def _conv_samples(nd: int):
    def gen(dtype):
        cases = _conv_cases(nd)
        for i, (xs, ws, has_b, kw) in enumerate(cases):
            lay = _layout(i, len(cases))
            x = make(xs, dtype, layout=lay if 0 not in xs else "contiguous")
            w = make(ws, dtype, layout=WEIGHT_LAYOUT[lay] if 0 not in ws else "contiguous")
            b = make((ws[0],), dtype, layout="strided") if has_b else None
            yield SampleInput((x, w, b), kw, f"{lay}{list(xs)}*{list(ws)}{kw}")
    return gen


def _conv_transpose_cases(nd: int):
    sp = {1: (6,), 2: (4, 5), 3: (3, 4, 3)}[nd]
    k = {1: (3,), 2: (3, 2), 3: (3, 2, 2)}[nd]
    return [
        ((2, 4) + sp, (4, 3) + k, True, {}),
        ((2, 4) + sp, (4, 2) + k, True, {"groups": 2, "stride": 2, "padding": 1,
                                         "output_padding": 1}),
        ((2, 4) + sp, (4, 3) + k, False, {"stride": (2,) * nd, "dilation": 2,
                                          "output_padding": (1,) * nd}),
        ((4,) + sp, (4, 2) + k, True, {"padding": 1}),
        ((0, 4) + sp, (4, 2) + k, True, {}),
        ((1, 2) + (3,) * nd, (2, 2) + (2,) * nd, True, {"stride": 2}),
    ]


def _conv_transpose_samples(nd: int):
    def gen(dtype):
        cases = _conv_transpose_cases(nd)
        for i, (xs, ws, has_b, kw) in enumerate(cases):
            lay = _layout(i, len(cases))
            x = make(xs, dtype, layout=lay if 0 not in xs else "contiguous")
            w = make(ws, dtype, layout=WEIGHT_LAYOUT[lay])
            groups = kw.get("groups", 1)
            b = make((ws[1] * groups,), dtype) if has_b else None
            yield SampleInput((x, w, b), kw, f"{lay}{list(xs)}*{list(ws)}{kw}")
    return gen


def _conv_errors(nd: int, name: str):
    def gen():
        sp = (8,) * nd
        x = make((2, 3) + sp)
        w = make((4, 3) + (3,) * nd)
        yield ErrorInput(SampleInput((make((2, 3)[2 - nd:]), w, None)), RuntimeError,
                         rf"Expected {nd + 1}D \(unbatched\) or {nd + 2}D \(batched\) input "
                         rf"to {name}")
        yield ErrorInput(SampleInput((make((2, 5) + sp), w, None)), RuntimeError,
                         r"expected input\[2, 5, .*to have 3 channels, but got 5")
        yield ErrorInput(SampleInput((make((2, 3) + (2,) * nd), w, None)), RuntimeError,
                         "Kernel size can't be greater than actual input size")
        yield ErrorInput(SampleInput((x, make((3, 3) + (3,) * nd), None), {"groups": 2}),
                         RuntimeError, "expected weight to be divisible by 2")
        yield ErrorInput(SampleInput((x, make((4, 3) + (3,) * nd, "float64"), None)),
                         RuntimeError, r"Input type \(torch.FloatTensor\) and weight type "
                         r"\(torch.DoubleTensor\) should be the same")
        yield ErrorInput(SampleInput((x, w, make((4,), "float64"))), RuntimeError,
                         r"Input type \(float\) and bias type \(double\)")
        yield ErrorInput(SampleInput((x, w, make((5,)))), RuntimeError,
                         "expected bias to be 1-dimensional with 4 elements")
        yield ErrorInput(SampleInput((x, w, None), {"stride": 0}), RuntimeError,
                         "non-positive stride is not supported")
        yield ErrorInput(SampleInput((x, w, None), {"padding": -1}), RuntimeError,
                         "negative padding is not supported")
        yield ErrorInput(SampleInput((x, w, None), {"dilation": 0}), RuntimeError,
                         "non-positive dilation is not supported")
        yield ErrorInput(SampleInput((x, w, None), {"groups": 0}), RuntimeError,
                         "non-positive groups is not supported")
        yield ErrorInput(SampleInput((x, w, None), {"padding": "same", "stride": 2}),
                         RuntimeError, "padding='same' is not supported for strided")
        yield ErrorInput(SampleInput((x, w, None), {"padding": "foo"}), RuntimeError,
                         "Invalid padding string: 'foo'")
        yield ErrorInput(SampleInput((x, w, None), {"stride": (1,) * (nd + 1)}), RuntimeError,
                         f"expected stride to be a single integer value or a list of {nd} "
                         "values")
        yield ErrorInput(SampleInput((x.bool(), w.bool(), None)), NotImplementedError,
                         "not implemented for 'Bool'")
    return gen


def _conv_transpose_errors(nd: int):
    def gen():
        x = make((2, 3) + (5,) * nd)
        yield ErrorInput(SampleInput((x, make((4, 4) + (3,) * nd), None)), RuntimeError,
                         r"Given transposed=1, weight of size \[4, 4, .*to have 4 channels, "
                         "but got 3 channels")
        yield ErrorInput(SampleInput((x, make((3, 4) + (3,) * nd), None),
                                     {"stride": 2, "output_padding": 2}), RuntimeError,
                         "output padding must be smaller than either stride or dilation")
        yield ErrorInput(SampleInput((make((2, 0) + (5,) * nd), make((0, 3) + (3,) * nd),
                                      None)), RuntimeError,
                         r"expected weight to be at least 1 at dimension 0, but got weight "
                         r"of size \[0, 3")
    return gen


def _conv_fn(nd: int):
    def fn(lib, x, w, b, **kw):
        return getattr(_F(lib), f"conv{nd}d")(x, w, b, **kw)
    return fn


def _conv_transpose_fn(nd: int):
    def fn(lib, x, w, b, **kw):
        return getattr(_F(lib), f"conv_transpose{nd}d")(x, w, b, **kw)
    return fn


# -- pooling ----------------------------------------------------------------------------------
_POOL2D = [((2, 3, 7, 6), {"kernel_size": 2}),
           ((2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
           ((3, 7, 6), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)}),
           ((0, 3, 7, 6), {"kernel_size": 2})]
_SMALL2D = ((1, 2, 4, 4), {"kernel_size": 2, "stride": 1})  # last: gradcheck-sized
_MAXPOOL2D = _POOL2D + [((2, 3, 7, 6), {"kernel_size": (2, 2), "dilation": 2, "padding": 1,
                                        "ceil_mode": True}), _SMALL2D]
_AVGPOOL2D = _POOL2D + [
    ((2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                    "count_include_pad": False}),
    ((2, 3, 7, 6), {"kernel_size": (3, 2), "padding": 1, "divisor_override": 5}), _SMALL2D]
_POOL1D = [((2, 3, 9), {"kernel_size": 2}),
           ((2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
           ((3, 9), {"kernel_size": 3, "stride": 1, "padding": 1}),
           ((0, 3, 9), {"kernel_size": 2}),
           ((1, 2, 5), {"kernel_size": 2, "stride": 1})]


def _shaped_samples(cases, layouts=LAYOUTS):
    def gen(dtype):
        for i, (shape, kw) in enumerate(cases):
            lay = _layout(i, len(cases), layouts)
            lay = "contiguous" if 0 in shape else lay
            yield SampleInput((make(shape, dtype, layout=lay),), dict(kw), f"{lay}{shape}{kw}")
    return gen


# Values with no ties: max pooling's gradient is then unique and finite differences agree.
_NO_TIES = ("contiguous", "permuted", "strided", "offset")


def _max_pool_fn(nd: int):
    def fn(lib, x, **kw):
        if _is_torch(lib):
            return getattr(TF, f"max_pool{nd}d")(x, return_indices=True, **kw)
        return getattr(P, f"max_pool{nd}d_with_indices")(x, **kw)
    return fn


def _avg_pool_fn(nd: int):
    def fn(lib, x, **kw):
        return getattr(_P(lib), f"avg_pool{nd}d")(x, **kw)
    return fn


def _pool_errors():
    x = make((2, 3, 8, 8))
    return [
        ErrorInput(SampleInput((x,), {"kernel_size": 3, "padding": 2}), RuntimeError,
                   "pad should be at most half of effective kernel size"),
        ErrorInput(SampleInput((x,), {"kernel_size": 2, "stride": 0}), RuntimeError,
                   "stride should not be zero"),
        ErrorInput(SampleInput((make((2, 0, 8, 8)),), {"kernel_size": 2}), RuntimeError,
                   "Expected 3D or 4D"),
        ErrorInput(SampleInput((make((2, 3, 1, 1)),), {"kernel_size": 3}), RuntimeError,
                   "Output size is too small"),
    ]


def _max_pool_errors():
    yield from _pool_errors()
    yield ErrorInput(SampleInput((make((8, 8)),), {"kernel_size": 2}), RuntimeError,
                     r"non-empty 3D or 4D \(batch mode\) tensor expected for input")
    yield ErrorInput(SampleInput((make((2, 3, 8, 8)),), {"kernel_size": 2, "dilation": 0}),
                     RuntimeError, "dilation should be greater than zero")


def _avg_pool_errors():
    yield from _pool_errors()
    yield ErrorInput(SampleInput((make((8, 8)),), {"kernel_size": 2}), IndexError,
                     "Dimension out of range")
    yield ErrorInput(SampleInput((make((2, 3, 8, 8)),), {"kernel_size": 2,
                                                          "divisor_override": 0}),
                     RuntimeError, "divisor must be not zero")


_ADAPTIVE2D = [((2, 3, 7, 6), (3, 4)), ((2, 3, 7, 6), 1), ((3, 5, 7), (5, None)),
               ((2, 3, 4, 5), (6, 7)), ((0, 3, 4, 5), 2), ((1, 2, 5, 4), (3, 3))]
_ADAPTIVE1D = [((2, 3, 9), 4), ((3, 7), 3), ((2, 3, 4), 6), ((1, 2, 5), 2)]


def _adaptive_samples(cases):
    def gen(dtype):
        for i, (shape, out) in enumerate(cases):
            lay = _NO_TIES[i % len(_NO_TIES)]
            lay = "contiguous" if 0 in shape else lay
            yield SampleInput((make(shape, dtype, layout=lay), out), {}, f"{lay}{shape}->{out}")
    return gen


def _adaptive_zero_channels(lib, name, x, out):
    return _adaptive_fn(name, name.startswith("adaptive_max"))(lib, x, out)


def _zero_channel_samples(dtype):
    for nd in (1, 2, 3):
        for kind in ("avg", "max"):
            for shape in ((2, 0) + (5,) * nd, (0,) + (5,) * nd, (2, 3, 0) + (5,) * (nd - 1)):
                yield SampleInput((f"adaptive_{kind}_pool{nd}d", make(shape, dtype), 3), {},
                                  f"{kind}{nd}d{list(shape)}")


def _adaptive_fn(name: str, indices: bool):
    def fn(lib, x, out):
        if _is_torch(lib):
            kw = {"return_indices": True} if indices else {}
            return getattr(TF, name)(x, out, **kw)
        return getattr(P, name)(x, out)
    return fn


def _adaptive_errors():
    return [
        ErrorInput(SampleInput((make((2, 3, 0, 4)), 2)), RuntimeError,
                   "Expected input to have non-zero size for non-batch dimensions"),
    ]


# -- padding ----------------------------------------------------------------------------------
_PADS = {"constant": [((2, 3, 4), (1, 2)), ((2, 3, 4), (2, 1, -1, 3, 1, 0)),
                      ((5,), (-2, 3)), ((2, 0, 3), (1, 1, 2, 2)), ((1, 2, 3, 4, 2), (1,) * 10)],
         "reflect": [((2, 3, 5), (2, 1)), ((2, 3, 4, 5), (2, 1, 3, 0)), ((3, 5), (-1, 2)),
                     ((1, 2, 3, 3, 4), (1, 2, 2, 1, 0, 1))],
         "replicate": [((2, 3, 5), (2, 4)), ((2, 3, 4, 5), (2, 1, -1, 3)), ((3, 5), (0, 2))],
         "circular": [((2, 3, 5), (2, 4)), ((2, 3, 4, 5), (2, 1, -1, 3)), ((3, 5), (1, -2)),
                      ((1, 2, 3, 3, 4), (1, 2, 2, 1, 0, 1)), ((0, 3, 5), (2, 1)),
                      ((0, 2, 4, 5), (1, 2, 0, 3))]}  # empty batches


def _pad_samples(mode: str):
    def gen(dtype):
        for i, (shape, p) in enumerate(_PADS[mode]):
            lay = _layout(i, len(_PADS[mode]))
            lay = "contiguous" if 0 in shape or (lay == "permuted" and len(shape) < 2) else lay
            kw = {"value": 1.5} if mode == "constant" and i == 1 else {}
            yield SampleInput((make(shape, dtype, layout=lay), p, mode), kw,
                              f"{lay}{shape}{p}")
    return gen


def _pad_fn(lib, x, p, mode, **kw):
    return TF.pad(x, p, mode, **kw) if _is_torch(lib) else C.pad(x, list(p), mode, **kw)


def _pad_errors():
    x = make((2, 3, 4, 4))
    return [
        ErrorInput(SampleInput((x, (1,), "constant")), RuntimeError,
                   "Padding length must be divisible by 2"),
        ErrorInput(SampleInput((x, (1, 1) * 5, "constant")), RuntimeError,
                   "Padding length should be less than or equal to two times"),
        ErrorInput(SampleInput((x, (1, 1), "reflect")), NotImplementedError,
                   "Padding size 2 is not supported for 4D input tensor"),
        ErrorInput(SampleInput((x, (4, 1, 0, 0), "reflect")), RuntimeError,
                   "Padding size should be less than the corresponding input dimension"),
        ErrorInput(SampleInput((x, (1, 1, 1, 1), "foo")), NotImplementedError,
                   "Unrecognised padding mode foo"),
        ErrorInput(SampleInput((x, (1, 1, 1, 1), "reflect"), {"value": 1.0}), RuntimeError,
                   "doesn't take in value argument"),
    ]


def pair(v) -> list:
    return [v, v] if isinstance(v, int) else list(v)


# -- im2col / col2im --------------------------------------------------------------------------
_UNFOLD = [((2, 3, 6, 5), {"kernel_size": 2}),
           ((2, 3, 6, 5), {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1,
                           "stride": (2, 1)}),
           ((3, 6, 5), {"kernel_size": 3, "padding": 1, "stride": 2}),
           ((0, 3, 6, 5), {"kernel_size": 2}),
           ((1, 2, 3, 3), {"kernel_size": 2})]


def _unfold_fn(lib, x, kernel_size, dilation=1, padding=0, stride=1):
    if _is_torch(lib):
        return TF.unfold(x, kernel_size, dilation, padding, stride)
    return C.im2col(x, pair(kernel_size), pair(dilation), pair(padding), pair(stride))


def _fold_samples(dtype):
    for i, (shape, kw) in enumerate(_UNFOLD):
        k, d = kw["kernel_size"], kw.get("dilation", 1)
        k, d, p, s = pair(k), pair(d), pair(kw.get("padding", 0)), pair(kw.get("stride", 1))
        blocks = [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1
                  for n, kk, pp, dd, ss in zip(shape[-2:], k, p, d, s)]
        cols = shape[:-3] + (shape[-3] * k[0] * k[1], blocks[0] * blocks[1])
        lay = _layout(i, len(_UNFOLD)) if 0 not in shape else "contiguous"
        yield SampleInput((make(cols, dtype, layout=lay), shape[-2:]), dict(kw), f"{lay}{cols}")


def _fold_fn(lib, x, out, kernel_size, dilation=1, padding=0, stride=1):
    if _is_torch(lib):
        return TF.fold(x, out, kernel_size, dilation, padding, stride)
    return C.col2im(x, list(out), pair(kernel_size), pair(dilation), pair(padding),
                    pair(stride))


def _fold_errors():
    return [
        ErrorInput(SampleInput((make((2, 3, 8, 8)),), {"kernel_size": 9}), RuntimeError,
                   "calculated shape of the array of sliding blocks"),
    ]


def _col2im_errors():
    return [
        ErrorInput(SampleInput((make((2, 27, 35)), (8, 8)), {"kernel_size": 3}), RuntimeError,
                   "expected size of input's dimension 2 to match the calculated number"),
        ErrorInput(SampleInput((make((2, 26, 36)), (8, 8)), {"kernel_size": 3}), RuntimeError,
                   "to be divisible by the product of kernel_size"),
    ]


# -- resampling -------------------------------------------------------------------------------
_UPSAMPLE = [((2, 3, 4, 5), {"size": (7, 9)}),
             ((2, 3, 4, 5), {"scale_factor": 2}),
             ((2, 3, 4, 5), {"scale_factor": (1.7, 0.6)}),
             ((1, 2, 6, 6), {"size": (3, 4)}),
             ((1, 1, 3, 3), {"size": (5, 4)})]


def _upsample_samples(mode: str, align_corners):
    def gen(dtype):
        for i, (shape, kw) in enumerate(_UPSAMPLE):
            lay = _layout(i, len(_UPSAMPLE))
            kw = dict(kw, mode=mode)
            if align_corners is not None:
                kw["align_corners"] = align_corners
            yield SampleInput((make(shape, dtype, layout=lay),), kw, f"{lay}{shape}{kw}")
    return gen


def _upsample_fn(lib, x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    if _is_torch(lib):
        return TF.interpolate(x, size, scale_factor, mode, align_corners)
    n = x.ndim - 2
    if size is not None:
        out, scales = list(size), [None] * n
    else:
        sf = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * n
        out = [int(x.shape[2 + i] * s // 1) for i, s in enumerate(sf)]
        scales = [float(s) for s in sf]
    if mode == "nearest":
        return C.upsample_nearest2d(x, out, *scales)
    return C.upsample_bilinear2d(x, out, bool(align_corners), *scales)


# -- 3-d pooling ------------------------------------------------------------------------------
_POOL3D = [((2, 3, 5, 6, 4), {"kernel_size": 2}),
           ((2, 3, 5, 6, 4), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
           ((3, 5, 6, 4), {"kernel_size": (2, 3, 1), "stride": (1, 2, 1), "padding": (1, 1, 0)}),
           ((0, 3, 5, 6, 4), {"kernel_size": 2})]
_SMALL3D = ((1, 1, 3, 3, 4), {"kernel_size": 2, "stride": 1})
_MAXPOOL3D = _POOL3D + [((2, 3, 6, 5, 5), {"kernel_size": 2, "dilation": (2, 1, 2),
                                           "padding": 1, "ceil_mode": True}), _SMALL3D]
_AVGPOOL3D = _POOL3D + [
    ((2, 3, 5, 6, 4), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                       "count_include_pad": False}),
    ((2, 3, 5, 6, 4), {"kernel_size": (3, 2, 2), "padding": 1, "divisor_override": 5}),
    _SMALL3D]


def _max_pool3d_errors():
    x = make((2, 3, 6, 6, 6))
    cases = [((make((6, 6, 6)),), {"kernel_size": 2}, RuntimeError,
              r"non-empty 4D or 5D \(batch mode\) tensor expected for input"),
             ((x,), {"kernel_size": (2, 2)}, RuntimeError,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints"),
             ((x,), {"kernel_size": 2, "stride": (2, 2)}, RuntimeError,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three"),
             ((x,), {"kernel_size": 2, "dilation": (1, 1)}, RuntimeError,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints"),
             ((x,), {"kernel_size": 2, "stride": 0}, RuntimeError, "stride should not be zero"),
             ((x,), {"kernel_size": 2, "padding": -1}, RuntimeError,
              "pad must be non-negative, but got pad: -1"),
             ((x,), {"kernel_size": 2, "padding": (0, 2, 0)}, RuntimeError,
              "pad should be at most half of effective kernel size, but got pad=2"),
             ((x,), {"kernel_size": -1, "stride": 1}, RuntimeError,
              "kernel size should be greater than zero, but got kT: -1 kH: -1 kW: -1"),
             ((x,), {"kernel_size": 2, "stride": -1}, RuntimeError,
              "stride should be greater than zero, but got dT: -1 dH: -1 dW: -1"),
             ((x,), {"kernel_size": 2, "dilation": 0}, RuntimeError,
              "dilation should be greater than zero, but got dilationT: 0"),
             ((make((2, 0, 6, 6, 6)),), {"kernel_size": 2}, RuntimeError,
              r"max_pool3d_with_indices_out_cpu_template\(\): Expected input's non-batch "
              "dimensions to have positive length"),
             ((make((2, 3, 2, 6, 6)),), {"kernel_size": 3, "stride": 1}, RuntimeError,
              r"Given input size: \(3x2x6x6\). Calculated output size: \(3x0x4x4\). Output "
              "size is too small"),
             ((x.bool(),), {"kernel_size": 2}, NotImplementedError,
              "\"max_pool3d\" not implemented for 'Bool'")]
    return [ErrorInput(SampleInput(a, kw), err, m) for a, kw, err, m in cases]


def _avg_pool3d_errors():
    x = make((2, 3, 6, 6, 6))
    cases = [((make((6, 6, 6)),), {"kernel_size": 2, "divisor_override": 0}, RuntimeError,
              "non-empty 4D or 5D"),
             ((x,), {"kernel_size": 2, "divisor_override": 0}, RuntimeError,
              "divisor must be not zero"),
             ((make((2, 3, 1, 6, 6)),), {"kernel_size": 3, "padding": 1}, RuntimeError,
              r"input image \(T: 1 H: 6 W: 6\) smaller than kernel size \(kT: 3 kH: 3 kW: 3\)"),
             ((x,), {"kernel_size": (2, 2)}, RuntimeError,
              "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
             ((x,), {"kernel_size": 2, "padding": (1, 1)}, RuntimeError,
              "avg_pool3d: padding must be a single int, or a tuple of three ints"),
             ((make((2, 0, 6, 6, 6)),), {"kernel_size": 2}, RuntimeError,
              r"avg_pool3d\(\): Expected input's non-batch dimensions"),
             ((make((2, 3, 6, 6, 6), "float16"),), {"kernel_size": 2}, NotImplementedError,
              "\"avg_pool3d_out_frame\" not implemented for 'Half'"),
             ((make((2, 3, 6, 6, 6), "int32"),), {"kernel_size": 2}, NotImplementedError,
              "\"avg_pool3d_out_frame\" not implemented for 'Int'")]
    return [ErrorInput(SampleInput(a, kw), err, m) for a, kw, err, m in cases]


def _avg_pool2d_more_errors():
    yield from _avg_pool_errors()
    yield ErrorInput(SampleInput((make((6, 6)),), {"kernel_size": 2, "divisor_override": 0}),
                     RuntimeError, "divisor must be not zero")
    yield ErrorInput(SampleInput((make((2, 3, 6, 6), "int32"),), {"kernel_size": 2}),
                     NotImplementedError, "\"avg_pool2d\" not implemented for 'Int'")
    yield ErrorInput(SampleInput((make((2, 3, 6, 6)),), {"kernel_size": 2, "padding": -1}),
                     RuntimeError, "pad must be non-negative, but got pad: -1")


_ADAPTIVE3D = [((2, 3, 5, 6, 4), (3, 4, 2)), ((2, 3, 5, 6, 4), 1), ((3, 5, 7, 4), (5, None, 2)),
               ((2, 3, 3, 4, 2), (6, 7, 3)), ((0, 3, 4, 5, 3), 2), ((1, 2, 3, 4, 3), (2, 3, 2))]


def _adaptive3d_errors(name: str):
    is_max = "max" in name
    x = make((2, 3, 4, 4, 4))
    cases = [((make((4, 4, 4)), 2), rf"{name}\(\): Expected 4D or 5D tensor, but got"
              + (": " if is_max else " ") + r"\[4, 4, 4\]"),
             ((x, (2, 2)), rf"{name}\(\): internal error: output_size.size\(\) must be 3"
              if is_max else f"{name}: output_size must be 3"),
             ((x, (2, 2, -1)), r"Trying to create tensor with negative dimension -1: "
              r"\[2, 3, 2, 2, -1\]" if is_max else
              f"{name}: elements of output_size must be greater than or equal to 0 but "
              r"received \{2, 2,-1\}"),
             ((make((2, 3, 0, 4, 4)), 2), "Expected input to have non-zero size for non-batch "
              "dimensions, but input has sizes \\[2, 3, 0, 4, 4\\] with dimension 2 being empty"),
             ((make((2, 3, 4, 4, 4), "int32"), 2), f"\"{name}_cpu\" not implemented for 'Int'")]
    return lambda: [ErrorInput(SampleInput(a), NotImplementedError if "Int" in m else
                               RuntimeError, m) for a, m in cases]


# -- LP pooling -------------------------------------------------------------------------------
_INF = math.inf
_LP = {1: [((2, 3, 9), 2, {"kernel_size": 3}, None),
           ((2, 3, 9), 1.5, {"kernel_size": 3, "stride": 2, "ceil_mode": True}, 0.1),
           ((3, 9), _INF, {"kernel_size": 2}, None),
           ((2, 3, 8), -_INF, {"kernel_size": 2, "stride": 1}, None),
           ((2, 3, 8), 3, {"kernel_size": 2, "stride": 3, "ceil_mode": True}, None),
           ((1, 2, 5), 2, {"kernel_size": 2}, None)],
       2: [((2, 3, 7, 6), 2, {"kernel_size": 2}, None),
           ((2, 3, 7, 6), 1.5, {"kernel_size": (3, 2), "stride": (2, 1), "ceil_mode": True},
            0.1),
           ((3, 7, 6), _INF, {"kernel_size": 3, "stride": 2}, None),
           ((2, 3, 6, 6), -_INF, {"kernel_size": 2, "ceil_mode": True}, None),
           ((2, 3, 6, 6), 1, {"kernel_size": (2, 3)}, None),
           ((1, 1, 4, 4), 2, {"kernel_size": 2, "stride": 1}, None)],
       3: [((2, 3, 5, 4, 6), 2, {"kernel_size": 2}, None),
           ((2, 3, 5, 4, 6), 1.5, {"kernel_size": (3, 2, 2), "stride": (2, 1, 2),
                                   "ceil_mode": True}, 0.1),
           ((3, 5, 4, 6), _INF, {"kernel_size": 2}, None),
           ((1, 1, 3, 3, 3), 2, {"kernel_size": 2, "stride": 1}, None)]}


def _lp_samples(nd: int):
    def gen(dtype):
        cases = _LP[nd]
        for i, (shape, p, kw, low) in enumerate(cases):
            lay = _layout(i, len(cases), _NO_TIES)
            yield SampleInput((make(shape, dtype, layout=lay, low=low), p), dict(kw),
                              f"{lay}{shape}p={p}{kw}")
        # a window of zeros: the composite's gradient there is 0, not NaN
        x = make((1, 2) + (4,) * nd, dtype) * ember.tensor([0.0, 1.0], dtype=getattr(
            ember, dtype)).view((1, 2) + (1,) * nd)
        yield SampleInput((x, 2), {"kernel_size": 2}, "zero window")
    return gen


def _lp_fn(nd: int):
    def fn(lib, x, p, **kw):
        return getattr(_NF(lib), f"lp_pool{nd}d")(x, p, **kw)
    return fn


def _lp_errors(nd: int):
    def gen():
        x = make((2, 3) + (6,) * nd)
        if nd == 1:
            yield ErrorInput(SampleInput((x, 2), {"kernel_size": (3,)}), TypeError,
                             r"mul\(\): argument 'other' \(position 1\) must be Tensor, not "
                             "tuple")
        else:
            yield ErrorInput(SampleInput((x, 2), {"kernel_size": (3,)}), ValueError,
                             rf"not enough values to unpack \(expected {nd}, got 1\)")
        yield ErrorInput(SampleInput((x, 0), {"kernel_size": 2}), ZeroDivisionError,
                         "float division by zero")
    return gen


# -- max unpooling ----------------------------------------------------------------------------
_UNPOOL = {1: [((2, 3, 9), {"kernel_size": 2}, {}),
               ((2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1}, {"output_size": [9]}),
               ((3, 8), {"kernel_size": 2}, {"output_size": (3, 9)}),
               ((0, 3, 8), {"kernel_size": 2}, {}),
               ((1, 2, 6), {"kernel_size": 2}, {})],
           2: [((2, 3, 6, 6), {"kernel_size": 2}, {}),
               ((2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1},
                {"output_size": (7, 7)}),
               ((3, 5, 6), {"kernel_size": (2, 3)}, {"output_size": (5, 6)}),
               ((2, 3, 5, 6), {"kernel_size": 2}, {"output_size": (2, 3, 5, 7)}),
               ((0, 3, 6, 6), {"kernel_size": 2}, {}),
               ((1, 1, 4, 4), {"kernel_size": 2}, {})],
           3: [((2, 3, 4, 6, 5), {"kernel_size": 2}, {"output_size": (4, 6, 5)}),
               ((3, 5, 4, 6), {"kernel_size": (2, 1, 3), "stride": (2, 1, 2),
                               "padding": (1, 0, 1)}, {"output_size": (5, 4, 6)}),
               ((2, 2, 4, 4, 4), {"kernel_size": 3, "stride": 1, "padding": 1}, {}),
               ((1, 1, 2, 4, 4), {"kernel_size": 2}, {})]}


def _relayout(t, layout: str):
    """``t``'s values in a ``layout`` (contiguous, permuted, strided or offset) view."""
    if layout == "contiguous" or t.numel() == 0:
        return t
    if layout == "permuted":
        rev = list(reversed(range(t.ndim)))
        return t.permute(rev).contiguous().permute(rev)
    if layout == "strided":
        view = ember.zeros([2 * n for n in t.shape], dtype=t.dtype)[
            tuple(slice(None, None, 2) for _ in t.shape)]
    else:
        view = ember.zeros(t.numel() + 3, dtype=t.dtype)[3:].view(list(t.shape))
    view.copy_(t)
    return view


def _unpool_samples(nd: int):
    def gen(dtype):
        cases = _UNPOOL[nd]
        for i, (shape, pool, kw) in enumerate(cases):
            x = make(shape, dtype)
            v, idx = (P.max_pool1d_with_indices, P.max_pool2d_with_indices,
                      P.max_pool3d_with_indices)[nd - 1](x, **pool)
            lay = _layout(i, len(cases), _NO_TIES)
            # torch's backward views the indices, so they stay dense here (strided indices:
            # tests/nn/test_pooling_modules.py)
            idx = _relayout(idx, ("contiguous", "offset")[i % 2])
            yield SampleInput((_relayout(v, lay), idx), dict(pool, **kw), f"{lay}{shape}{pool}{kw}")
    return gen


def _unpool_fn(nd: int):
    def fn(lib, v, idx, **kw):
        return getattr(_NF(lib), f"max_unpool{nd}d")(v, idx, **kw)
    return fn


def _unpool_errors(nd: int):
    def gen():
        x = make((2, 3) + (6,) * nd)
        v, idx = (P.max_pool1d_with_indices, P.max_pool2d_with_indices,
                  P.max_pool3d_with_indices)[nd - 1](x, 2)
        k = {"kernel_size": 2}
        name = f"max_unpooling{max(nd, 2)}d"
        cases = [((v, idx), dict(k, output_size=(7,) * (nd + 1)), ValueError,
                  f"output_size should be a sequence containing {nd} or {nd + 2} elements, but "
                  f"it has a length of '{nd + 1}'"),
                 ((v, idx), dict(k, output_size=(8,) * nd), ValueError,
                  rf'invalid output_size "\({", ".join(["8"] * nd)},?\)" \(dim 0 must be '
                  r"between 4 and 8\)"),
                 ((v, idx + 1000), k, RuntimeError, "Found an invalid max index: 10"),
                 ((v, idx - 1000), k, RuntimeError, "Found an invalid max index: -"),
                 ((v, idx.int()), k, RuntimeError, "elements in indices should be type int64"),
                 ((v, idx.narrow(1, 0, 2)), k, RuntimeError,
                  "Expected shape of indices to be same as that of the input tensor"),
                 ((v[:, :0], idx[:, :0]), k, RuntimeError,
                  f"{name}_forward_out_cpu\\(\\): Expected input to have non-zero size for "
                  "non-batch dimensions"),
                 ((v.int(), idx), k, NotImplementedError,
                  f"\"max_unpool{max(nd, 2)}d\" not implemented for 'Int'")]
        if nd > 1:
            cases.append(((v[0, 0], idx[0, 0]), k, RuntimeError,
                          f"Input to {name} should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                          f"tensor with {nd} dimensions."))
        if nd == 3:
            cases.append(((v, idx), dict(k, stride=0), RuntimeError,
                          r"strides should be greater than zero, but got stride: \[0, 0, 0\]"))
        return [ErrorInput(SampleInput(a, kw), err, m) for a, kw, err, m in cases]
    return gen


# -- fractional max pooling -------------------------------------------------------------------
_FRACTIONAL = {2: [((2, 3, 11, 9), (2, 3), {"output_size": (5, 4)}, 2),
                   ((2, 3, 10, 10), 3, {"output_ratio": (0.5, 0.7)}, 3),
                   ((3, 9, 8), 2, {"output_size": 4}, 1),
                   ((0, 3, 8, 8), 2, {"output_size": 3}, 0),
                   ((2, 3, 8, 7), 2, {"output_size": (1, 6)}, 2),
                   ((1, 2, 5, 5), 2, {"output_size": 3}, 1)],
               3: [((2, 3, 7, 9, 8), 2, {"output_size": (4, 5, 3)}, 2),
                   ((2, 2, 8, 8, 8), (2, 3, 2), {"output_ratio": (0.5, 0.6, 0.7)}, 2),
                   ((3, 6, 7, 8), 2, {"output_size": 3}, 1),
                   ((1, 1, 4, 4, 4), 2, {"output_size": 2}, 1)]}


def _fractional_samples(nd: int):
    def gen(dtype):
        cases = _FRACTIONAL[nd]
        for i, (shape, k, kw, n) in enumerate(cases):
            lay = _layout(i, len(cases), _NO_TIES)
            lay = "contiguous" if 0 in shape else lay
            u = make((n, shape[-nd - 1], nd), dtype, low=0.0, high=1.0)
            yield SampleInput((make(shape, dtype, layout=lay), k),
                              dict(kw, _random_samples=u), f"{lay}{shape}k={k}{kw}")
    return gen


def _fractional_fn(nd: int):
    def fn(lib, x, k, **kw):
        return getattr(_NF(lib), f"fractional_max_pool{nd}d")(x, k, return_indices=True, **kw)
    return fn


def _fractional_errors(nd: int):
    def gen():
        fn = f"fractional_max_pool{nd}d" + ("()" if nd == 2 else "_out()")
        x = make((2, 3) + (8,) * nd)

        def u(*shape, dtype="float32", **kw):
            return make(shape, dtype, low=0.0, high=1.0, **kw)

        ok = u(2, 3, nd)
        names = ("height", "width") if nd == 2 else ("time", "height", "width")
        what = "Int or tuple of Ints" if nd == 2 else "Int or tuple of three Ints"
        cases = [((x, 3), {"output_size": 7}, RuntimeError,
                  rf"{re_escape(fn)}: pool {names[0]} 3 too large relative to input {names[0]} 8"),
                 ((x, 2), {}, ValueError, f"fractional_max_pool{nd}d requires specifying either "
                  "an output_size or an output_ratio"),
                 ((x, (2,) * (nd + 1)), {"output_size": 3}, RuntimeError,
                  f"fractional_max_pool{nd}d: kernel_size must either be a single {what}"),
                 ((x, 2), {"output_size": (3,) * (nd + 1)}, RuntimeError,
                  f"fractional_max_pool{nd}d: output_size must either be a single {what}"),
                 ((make((8,) * nd), 2), {"output_size": 3, "_random_samples": u(1, 1, nd)},
                  RuntimeError, rf"{re_escape(fn)}: Expected {nd + 1}D or {nd + 2}D tensor, "
                  "but got: "),
                 ((make((2, 0) + (8,) * nd), 2), {"output_size": 3, "_random_samples": ok},
                  RuntimeError, "Expected input to have non-zero size for non-batch dimensions"),
                 ((x, 2), {"output_size": 3, "_random_samples": u(1, 3, nd)}, RuntimeError,
                  r"Expect _random_samples.size\(0\) no less then input batch size."),
                 ((x, 2), {"output_size": 3, "_random_samples": u(2, 2, nd)}, RuntimeError,
                  r"Expect _random_samples.size\(1\) equals to input channel size."),
                 ((x, 2), {"output_size": 3, "_random_samples": u(2, 3, nd + 1)}, RuntimeError,
                  rf"Expect _random_samples.size\(2\) equals to {nd}; got {nd + 1}."),
                 ((x, 2), {"output_size": 3, "_random_samples": u(2, 3 * nd)}, RuntimeError,
                  "Expect _random_samples to have 3 dimensions, got 2"),
                 ((x, 2), {"output_size": 3, "_random_samples": u(2, 3, nd, dtype="float64")},
                  RuntimeError, "Expect _random_samples to have the same dtype as input"),
                 ((x, 2), {"output_size": 3, "_random_samples": u(2, 3, nd, requires_grad=True)},
                  RuntimeError, "is not differentiable with respect to argument "
                  "'random_samples'"),
                 ((x.int(), 2), {"output_size": 3, "_random_samples": u(2, 3, nd).int()},
                  NotImplementedError, "not implemented for 'Int'")]
        if nd == 2:
            cases.append(((x, 2), {"output_ratio": (0.5,) * 3}, ValueError,
                          "fractional_max_pool2d requires output_ratio to either be a single "
                          "Int or tuple of Ints."))
        return [ErrorInput(SampleInput(a, kw), err, m) for a, kw, err, m in cases]
    return gen


def re_escape(s: str) -> str:
    return s.replace("(", r"\(").replace(")", r"\)")


OPS = [
    OpInfo("conv1d", _conv_fn(1), _conv_samples(1), FLOATS + COMPLEX, tol=TOL,
           errors=_conv_errors(1, "conv1d")),
    OpInfo("conv2d", _conv_fn(2), _conv_samples(2), FLOATS + COMPLEX, tol=TOL,
           errors=_conv_errors(2, "conv2d")),
    OpInfo("conv_transpose1d", _conv_transpose_fn(1), _conv_transpose_samples(1),
           FLOATS + COMPLEX,
           tol=TOL, errors=_conv_transpose_errors(1)),
    OpInfo("conv_transpose2d", _conv_transpose_fn(2), _conv_transpose_samples(2),
           FLOATS + COMPLEX,
           tol=TOL, errors=_conv_transpose_errors(2)),
    OpInfo("conv3d", _conv_fn(3), _conv_samples(3), FLOATS + COMPLEX, tol=TOL,
           errors=_conv_errors(3, "conv3d")),
    OpInfo("conv_transpose3d", _conv_transpose_fn(3), _conv_transpose_samples(3),
           FLOATS + COMPLEX,
           tol=TOL, errors=_conv_transpose_errors(3)),
    OpInfo("max_pool2d_with_indices", _max_pool_fn(2), _shaped_samples(_MAXPOOL2D, _NO_TIES),
           FLOATS, errors=_max_pool_errors),
    OpInfo("max_pool1d_with_indices", _max_pool_fn(1), _shaped_samples(_POOL1D, _NO_TIES),
           FLOATS),
    OpInfo("avg_pool2d", _avg_pool_fn(2), _shaped_samples(_AVGPOOL2D), FLOATS, tol=TOL,
           errors=_avg_pool2d_more_errors),
    OpInfo("max_pool3d_with_indices", _max_pool_fn(3), _shaped_samples(_MAXPOOL3D, _NO_TIES),
           FLOATS, errors=_max_pool3d_errors),
    OpInfo("avg_pool3d", _avg_pool_fn(3), _shaped_samples(_AVGPOOL3D),
           ("float32", "float64", "int64"), tol=TOL, errors=_avg_pool3d_errors),
    OpInfo("adaptive_avg_pool3d", _adaptive_fn("adaptive_avg_pool3d", False),
           _adaptive_samples(_ADAPTIVE3D), FLOATS, tol=TOL,
           errors=_adaptive3d_errors("adaptive_avg_pool3d")),
    OpInfo("adaptive_max_pool3d", _adaptive_fn("adaptive_max_pool3d", True),
           _adaptive_samples(_ADAPTIVE3D), FLOATS,
           errors=_adaptive3d_errors("adaptive_max_pool3d")),
    *[OpInfo(f"lp_pool{nd}d", _lp_fn(nd), _lp_samples(nd), ("float32", "float64"), tol=TOL,
             errors=_lp_errors(nd)) for nd in (1, 2, 3)],
    *[OpInfo(f"max_unpool{nd}d", _unpool_fn(nd), _unpool_samples(nd), FLOATS,
             errors=_unpool_errors(nd)) for nd in (1, 2, 3)],
    *[OpInfo(f"fractional_max_pool{nd}d", _fractional_fn(nd), _fractional_samples(nd), FLOATS,
             errors=_fractional_errors(nd)) for nd in (2, 3)],
    OpInfo("avg_pool1d", _avg_pool_fn(1), _shaped_samples(_POOL1D), FLOATS, tol=TOL),
    OpInfo("adaptive_avg_pool2d", _adaptive_fn("adaptive_avg_pool2d", False),
           _adaptive_samples(_ADAPTIVE2D), FLOATS, tol=TOL,
           errors=_adaptive_errors),
    OpInfo("adaptive_avg_pool1d", _adaptive_fn("adaptive_avg_pool1d", False),
           _adaptive_samples(_ADAPTIVE1D), FLOATS, tol=TOL),
    OpInfo("adaptive_max_pool2d", _adaptive_fn("adaptive_max_pool2d", True),
           _adaptive_samples(_ADAPTIVE2D), FLOATS),
    # zero channels: averages pass (values only: torch's backward then refuses the empty
    # grad_output while ember's gives the empty gradient), maxima refuse
    OpInfo("adaptive_pool_zero_channels", _adaptive_zero_channels, _zero_channel_samples,
           ("float32", "float64")),
    OpInfo("adaptive_max_pool1d", _adaptive_fn("adaptive_max_pool1d", True),
           _adaptive_samples(_ADAPTIVE1D), FLOATS),
    *[OpInfo(f"pad_{mode}", _pad_fn, _pad_samples(mode), FLOATS,
             errors=_pad_errors if mode == "constant" else None) for mode in _PADS],
    OpInfo("unfold", _unfold_fn, _shaped_samples(_UNFOLD), FLOATS + COMPLEX,
           errors=_fold_errors),
    OpInfo("fold", _fold_fn, _fold_samples, FLOATS + COMPLEX, tol=TOL, errors=_col2im_errors),
    OpInfo("interpolate_nearest", _upsample_fn, _upsample_samples("nearest", None),
           FLOATS + COMPLEX),
    OpInfo("interpolate_bilinear", _upsample_fn, _upsample_samples("bilinear", False),
           FLOATS + COMPLEX,
           tol=TOL),
    OpInfo("interpolate_bilinear_align", _upsample_fn, _upsample_samples("bilinear", True),
           FLOATS + COMPLEX, tol=TOL),
]

# int dtypes run through conv (torch's slow path) but not through the float-only ops
OPS.append(OpInfo("conv2d_int", _conv_fn(2), lambda d: list(_conv_samples(2)(d))[:2],
                  ("int32", "int64")))
# torch's adaptive average pooling backward refuses an empty grad_output that ember accepts
OPS[[i.name for i in OPS].index("adaptive_pool_zero_channels")].grad = False

