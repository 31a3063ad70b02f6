"""Op-table entries: the shape-manipulation and sorting family (ember/ops/shape.py).

Ops whose index choice on ties is implementation defined (unstable ``sort``, ``topk``,
``kthvalue``) are compared through what the indices *select*: values exactly, and the input
gathered at the returned indices (which must equal the values).

Over 800 lines on purpose: one table for about forty operators, each entry with its own sample
generator and error inputs; splitting it would only scatter the shared sample helpers.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

import ember
from tests.opinfo import (
    ALL,
    COMPLEX,
    FLOATS,
    INTS,
    LAYOUTS,
    NUMERIC,
    SHAPES,
    ErrorInput,
    OpInfo,
    SampleInput,
    hostile,
    make,
    unary_samples,
)

OPS: list[OpInfo] = []


def _add(*infos: OpInfo) -> None:
    OPS.extend(infos)


def _with_args(shapes, arg_sets, *, layouts=LAYOUTS, writable=False, low=None, high=None):
    """Every shape in every layout, called with each tuple of extra positional arguments."""
    def gen(dtype):
        for shape in shapes:
            for lay, t in hostile(shape, dtype, layouts=layouts, writable=writable, low=low,
                                  high=high):
                for args in arg_sets:
                    yield SampleInput((t, *args), {}, f"{lay}{list(shape)}{args}")
    return gen


def _kw(shapes, kw_sets, *, layouts=LAYOUTS, writable=False):
    """Every shape in every layout, called with each dict of keyword arguments."""
    def gen(dtype):
        for shape in shapes:
            for lay, t in hostile(shape, dtype, layouts=layouts, writable=writable):
                for kw in kw_sets:
                    yield SampleInput((t,), dict(kw), f"{lay}{list(shape)}{kw}")
    return gen


def _empty(dtype: str) -> ember.Tensor:
    """A 0-element ``out=`` tensor (torch resizes it without warning)."""
    return ember.empty(0, dtype=getattr(ember, dtype))


def _root_values(t: ember.Tensor) -> np.ndarray:
    root = t._base if t._base is not None else t
    return root.numpy()


def _small_ints(shape, dtype, layout, nan=False):
    """A tensor of ``layout`` holding values in {0, 1, 2} (plenty of ties), NaN optional."""
    t = make(shape, dtype, layout=layout, low=0, high=3)
    raw = _root_values(t)
    vals = np.floor(raw.astype(np.float32))
    if nan and dtype in FLOATS and vals.size > 2:
        vals.flat[1] = np.nan
    raw[...] = vals.astype(raw.dtype)
    return t


def _sorted_tensor(shape, dtype, layout, low=None, high=None):
    """A tensor of ``layout`` whose innermost dim is sorted (its whole storage is sorted)."""
    t = make(shape, dtype, layout=layout, low=low, high=high)
    raw = _root_values(t)
    raw[...] = np.sort(raw.astype(np.float64), axis=None).reshape(raw.shape).astype(raw.dtype)
    return t


def _gathered(lib, x, dim, idx):
    """``x`` gathered at ``idx`` along ``dim`` (through NumPy, so no gather op is needed)."""
    if x.device.type == "meta":
        return ember.empty(tuple(idx.shape), dtype=x.dtype, device="meta")
    if lib is torch:
        src = x.detach().float() if x.dtype == torch.bfloat16 else x.detach()
        a = np.take_along_axis(np.atleast_1d(src.numpy()), np.atleast_1d(idx.numpy()), dim)
        return torch.from_numpy(a.reshape(tuple(idx.shape)).copy()).to(x.dtype)
    src = x.detach().float() if x.dtype is ember.bfloat16 else x.detach()
    a = np.take_along_axis(np.atleast_1d(src.numpy()), np.atleast_1d(idx.numpy()), dim)
    return ember.tensor(a.reshape(tuple(idx.shape))).to(x.dtype)


def _canon(x, dim):
    return dim % max(x.dim(), 1)


def _sort_selected(lib, x, **kw):
    """Unstable sort: values exactly, and the input at the returned indices equals them."""
    values, indices = lib.sort(x, **kw)
    return values, _gathered(lib, x, _canon(x, kw.get("dim", -1)), indices)


def _topk_selected(lib, x, k, **kw):
    values, indices = lib.topk(x, k, **kw)
    return values, _gathered(lib, x, _canon(x, kw.get("dim", -1)), indices)


def _kth_selected(lib, x, k, dim=-1, keepdim=False):
    values, indices = lib.kthvalue(x, k, dim, keepdim)
    if not keepdim and x.dim():
        indices = indices.unsqueeze(_canon(x, dim))
    picked = _gathered(lib, x, _canon(x, dim), indices)
    return values, picked if keepdim or not x.dim() else picked.squeeze(_canon(x, dim))


# -- joining ------------------------------------------------------------------------------------
CAT_CASES = [((2, 3), (4, 3), 0), ((2, 3), (2, 1), 1), ((2, 0, 3), (2, 2, 3), 1),
             ((0,), (2, 3), 0), ((0,), (0,), 0), ((3,), (2,), -1), ((1, 1), (1, 1), -2),
             ((2, 3, 4), (2, 3, 1), 2), ((0,), (2, 3), 1)]


def _cat_samples(dtype):
    for sa, sb, dim in CAT_CASES:
        for lay in LAYOUTS:
            if lay == "permuted" and len(sa) < 2:
                continue
            a = make(sa, dtype, layout=lay)
            b = make(sb, dtype, layout="strided")
            yield SampleInput(([a, b], dim), {}, f"{lay}{list(sa)}+{list(sb)}@{dim}")
    yield SampleInput(([make((2, 3), dtype), make((1, 3), "int32"), make((0,), "float64")], 0),
                      {}, "mixed-dtypes")
    yield SampleInput(((make((3,), dtype), make((3,), dtype, layout="expanded"),
                        make((1,), dtype)), 0), {}, "tuple-of-three")
    yield SampleInput(([make((2, 2), dtype)], 1), {}, "single")
    yield SampleInput(([make((2, 2), dtype), make((1, 2), dtype)], 0),
                      {"out": ember.empty(0, dtype=getattr(ember, dtype))}, "out")


def _cat_errors():
    a, b = make((2, 3)), make((2, 4))
    yield ErrorInput(SampleInput(([a, b], 0)), RuntimeError,
                     r"Sizes of tensors must match except in dimension 0\. Expected size 3 but "
                     r"got size 4 for tensor number 1 in the list\.")
    yield ErrorInput(SampleInput(([make((3, 2)), make((4, 2))], 1)), RuntimeError,
                     r"Sizes of tensors must match except in dimension 1\. Expected size 3 but "
                     r"got size 4 for tensor number 1 in the list\.")
    yield ErrorInput(SampleInput(([],)), ValueError, "expected a non-empty list of Tensors")
    yield ErrorInput(SampleInput(([a, make(())],)), RuntimeError,
                     r"zero-dimensional tensor \(at position 1\) cannot be concatenated")
    yield ErrorInput(SampleInput(([a, make((2, 3, 1))], 1)), RuntimeError,
                     "Tensors must have same number of dimensions: got 2 and 3")
    yield ErrorInput(SampleInput(([a, a], 2)), IndexError, "Dimension out of range")
    yield ErrorInput(SampleInput(([a, a], 0), {"out": ember.empty(0, dtype=ember.int32)}),
                     TypeError, "can't be cast to the desired output type Int")


def _stack_samples(dtype):
    for shape, dims in (((2, 3), (0, 1, 2, -1)), ((), (0, -1)), ((0, 3), (0, 1)),
                        ((3,), (0, 1))):
        for lay, t in hostile(shape, dtype):
            for d in dims:
                other = make(shape, dtype, layout="strided")
                yield SampleInput(([t, other, t], d), {}, f"{lay}{list(shape)}@{d}")
    yield SampleInput(([make((2,), dtype), make((2,), "int32")], 0), {}, "mixed")


def _stack_errors():
    yield ErrorInput(SampleInput(([make((2, 3)), make((2, 4))], 0)), RuntimeError,
                     r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                     r"and \[2, 4\] at entry 1")
    yield ErrorInput(SampleInput(([],)), RuntimeError, "stack expects a non-empty TensorList")
    yield ErrorInput(SampleInput(([make((2, 3)), make((2, 3))], 3)), IndexError,
                     "Dimension out of range")


JOIN_LISTS = [[(3,), (3,)], [(2, 3), (2, 1)], [(), ()], [(2, 3, 4), (2, 3, 4)],
              [(2, 3), (2, 3), (2, 3)], [(3,), (3, 2), (3,)], [(1, 3), ()], [(2, 2), (1, 2)],
              [(0,), (0,)]]


def _list_samples(dtype):
    for shapes in JOIN_LISTS:
        for lay in ("contiguous", "permuted", "strided", "expanded"):
            ts = [make(s, dtype, layout=lay if len(s) >= 2 or lay != "permuted" else
                       "contiguous") for s in shapes]
            yield SampleInput((ts,), {}, f"{lay}{shapes}")


def _empty_list_error(name):
    def gen():
        yield ErrorInput(SampleInput(([],)), RuntimeError,
                         f"{name} expects a non-empty TensorList")
    return gen


_add(
    OpInfo("cat", lambda lib, ts, *a, **k: lib.cat(ts, *a, **k), _cat_samples, dtypes=ALL,
           errors=_cat_errors),
    OpInfo("concat", lambda lib, ts, *a, **k: lib.concat(ts, *a, **k), _cat_samples,
           dtypes=("float64", "float32", "int64")),
    OpInfo("concatenate", lambda lib, ts, d=0, **k: lib.concatenate(ts, axis=d, **k),
           _cat_samples, dtypes=("float64", "float32", "bool")),
    OpInfo("stack", lambda lib, ts, *d: lib.stack(ts, *d), _stack_samples, dtypes=ALL,
           errors=_stack_errors),
    OpInfo("stack_out", lambda lib, ts, d, out: lib.stack(ts, d, out=out),
           lambda dt: [SampleInput(([make((2, 3), dt), make((2, 3), dt)], 1,
                                    _empty(dt)), {}, "out")], dtypes=ALL),
)
for _name in ("hstack", "vstack", "row_stack", "dstack", "column_stack"):
    _add(OpInfo(_name, (lambda n: lambda lib, ts: getattr(lib, n)(ts))(_name), _list_samples,
                dtypes=ALL, errors=_empty_list_error(_name), check_stride=True))


# -- atleast, broadcasting, meshgrid -------------------------------------------------------------
for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    _add(OpInfo(_name, (lambda n: lambda lib, x: getattr(lib, n)(x))(_name), unary_samples,
                dtypes=ALL, is_view=True),
         OpInfo(_name + "_list", (lambda n: lambda lib, *ts: getattr(lib, n)(*ts))(_name),
                lambda dt: [SampleInput((make((), dt), make((3,), dt), make((2, 3), dt),
                                         make((2, 3, 4), dt, layout="permuted")), {}, "varargs"),
                            SampleInput(([make((), dt), make((3,), dt)],), {}, "list")],
                dtypes=("float64", "float32", "bool"), check_stride=True))

BCAST = [[(3, 1), (4,)], [(2, 1, 3), (5, 1), ()], [(0, 3), (1, 3)], [(3,)], [(1,), (1, 1, 1)]]


def _bcast_samples(dtype):
    for shapes in BCAST:
        for lay in ("contiguous", "strided", "expanded"):
            yield SampleInput(tuple(make(s, dtype, layout=lay) for s in shapes), {},
                              f"{lay}{shapes}")


def _meshgrid_samples(dtype):
    for shapes in ([(3,), (4,)], [(2,), (), (3,)], [(0,), (2,)], [(5,)], [(3,), (2,), (4,)]):
        for lay in ("contiguous", "strided", "offset"):
            ts = tuple(make(s, dtype, layout=lay) for s in shapes)
            for indexing in ("ij", "xy"):
                yield SampleInput(ts, {"indexing": indexing}, f"{lay}{shapes}{indexing}")
                yield SampleInput((list(ts),), {"indexing": indexing}, f"list{shapes}{indexing}")


def _meshgrid_errors():
    a, b = make((3,)), make((2,))
    yield ErrorInput(SampleInput((a, b), {"indexing": "foo"}), RuntimeError,
                     'indexing must be one of "xy" or "ij", but received: foo')
    yield ErrorInput(SampleInput((a, make((2,), "int32")), {"indexing": "ij"}), RuntimeError,
                     "meshgrid expects all tensors to have the same dtype")
    yield ErrorInput(SampleInput((a, make((2, 2))), {"indexing": "ij"}), RuntimeError,
                     "Expected 0D or 1D tensor in the tensor list")
    yield ErrorInput(SampleInput(([],), {"indexing": "ij"}), RuntimeError,
                     "meshgrid expects a non-empty TensorList")


def _meshgrid_default(lib, *ts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.meshgrid(*ts)


def _bshapes_samples(dtype):
    for shapes in (((2, 1), (3,)), (2, (3, 1)), ((),), ((0, 1), (1, 4)), ()):
        yield SampleInput(shapes, {}, repr(shapes))


_add(
    OpInfo("broadcast_tensors", lambda lib, *ts: lib.broadcast_tensors(*ts), _bcast_samples,
           dtypes=ALL, check_stride=True,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), make((2, 2)))), RuntimeError,
                                      "must match the size")]),
    OpInfo("broadcast_shapes", lambda lib, *s: lib.broadcast_shapes(*s), _bshapes_samples,
           dtypes=("float32",),
           errors=lambda: [ErrorInput(SampleInput(((2, 1), (3, 2))), RuntimeError, "")]),
    OpInfo("meshgrid", lambda lib, *ts, **k: lib.meshgrid(*ts, **k), _meshgrid_samples,
           dtypes=ALL, check_stride=True, errors=_meshgrid_errors),
    OpInfo("meshgrid_default_indexing", _meshgrid_default,
           lambda dt: [SampleInput((make((3,), dt), make((2,), dt)), {}, "ij")],
           dtypes=("float64", "float32"), check_stride=True),
)


# -- flip, roll, rot90, repeat, tile -------------------------------------------------------------
def _flip_samples(dtype):
    for shape in SHAPES + [(2, 3, 4)]:
        nd = len(shape)
        for lay, t in hostile(shape, dtype):
            for dims in {tuple(range(nd)), (-1,), (0,), ()}:
                yield SampleInput((t, dims), {}, f"{lay}{list(shape)}{dims}")


def _flip_errors():
    x = make((2, 3))
    yield ErrorInput(SampleInput((x, (0, 0))), RuntimeError,
                     "dim 0 appears multiple times in the list of dims")
    yield ErrorInput(SampleInput((x, (2,))), IndexError, "Dimension out of range")


def _roll_errors():
    x = make((2, 3))
    yield ErrorInput(SampleInput((x, (1, 2), (0,))), RuntimeError,
                     "shifts and dimensions must align. shifts: 2, dims:1")
    yield ErrorInput(SampleInput((x, (1, 2), None)), RuntimeError,
                     "shifts and dimensions must align. shifts: 2, dims:0")
    yield ErrorInput(SampleInput((x, (), None)), RuntimeError, "`shifts` required")
    yield ErrorInput(SampleInput((make(()), 1, 0)), IndexError,
                     "Dimension specified as 0 but tensor has no dimensions")


def _rot90_errors():
    x = make((2, 3))
    yield ErrorInput(SampleInput((x, 1, (0, 0))), RuntimeError,
                     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0")
    yield ErrorInput(SampleInput((x, 1, (0,))), RuntimeError,
                     "expected total rotation dims == 2, but got dims = 1")
    yield ErrorInput(SampleInput((make((3,)), 1, (0, 1))), RuntimeError,
                     "expected total dims >= 2, but got total dims = 1")
    yield ErrorInput(SampleInput((x, 1, (0, 2))), IndexError, "Dimension out of range")


def _repeat_errors():
    x = make((2, 3))
    yield ErrorInput(SampleInput((x, (2,))), RuntimeError,
                     "Number of dimensions of repeat dims can not be smaller")
    yield ErrorInput(SampleInput((x, (2, -1))), RuntimeError,
                     r"Trying to create tensor with negative dimension -3: \[4, -3\]")


_add(
    OpInfo("flip", lambda lib, x, d: lib.flip(x, d), _flip_samples, dtypes=ALL,
           errors=_flip_errors),
    OpInfo("flip_method_varargs", lambda lib, x, *d: x.flip(*d),
           _with_args([(2, 3, 4)], [(0,), (0, 2), (-1, 1)]), dtypes=("float64", "float32", "int8")),
    OpInfo("fliplr", lambda lib, x: lib.fliplr(x), unary_samples, dtypes=ALL),
    OpInfo("flipud", lambda lib, x: lib.flipud(x), unary_samples, dtypes=ALL),
    OpInfo("roll", lambda lib, x, s, d: lib.roll(x, s, d),
           _with_args([(), (0,), (5,), (3, 4), (2, 1, 3), (2, 3, 0)],
                      [(1, None), (-7, None), (2, 0), (-1, -1), ((1, 2), (0, -1))]),
           dtypes=ALL, errors=_roll_errors),
    OpInfo("rot90", lambda lib, x, k, d: lib.rot90(x, k, d),
           _with_args([(3, 4), (2, 3, 4), (0, 2), (1, 1)],
                      [(1, (0, 1)), (2, (0, 1)), (3, (0, 1)), (0, (0, 1)), (-1, (1, 0)),
                       (5, (-1, 0))]),
           dtypes=ALL, errors=_rot90_errors),
    OpInfo("rot90_strides", lambda lib, x, k, d: lib.rot90(x, k, d),
           _with_args([(3, 4), (2, 3, 4)], [(1, (0, 1)), (2, (1, 2)), (3, (-1, 0)), (0, (0, 1))],
                      layouts=("contiguous",)), dtypes=("float64", "float32"), check_stride=True),
    OpInfo("repeat", lambda lib, x, r: x.repeat(*r),
           _with_args([(), (0,), (3,), (2, 3), (2, 1, 3)],
                      [((2, 1, 1),), ((1, 1, 1, 2),), ((3, 0, 2),), ((2, 2, 2, 1, 1),)]),
           dtypes=ALL, errors=_repeat_errors),
    OpInfo("repeat_exact_dims", lambda lib, x, r: x.repeat(r),
           _with_args([(2, 3)], [((2, 3),), ((1, 1),)]), dtypes=("float64", "float32")),
    OpInfo("tile", lambda lib, x, r: lib.tile(x, r),
           _with_args([(), (3,), (2, 3), (2, 1, 3)], [((2,),), ((2, 1, 1),), ((),),
                                                      ((0, 2),)]), dtypes=ALL),
)


# -- repeat_interleave ---------------------------------------------------------------------------
def _ri_tensor_samples(dtype):
    for lay, t in hostile((2, 3), dtype):
        yield SampleInput((t, make((2,), "int64", low=0, high=3), 0), {}, f"{lay}dim0")
        yield SampleInput((t, make((3,), "int32", low=0, high=3), 1), {}, f"{lay}dim1")
        yield SampleInput((t, make((1,), "int64", low=0, high=3), None), {}, f"{lay}flat1")
        yield SampleInput((t, make((), "int64", low=0, high=3), 0), {}, f"{lay}scalar-rep")
        yield SampleInput((t, make((2,), "float32"), 0), {}, f"{lay}float-repeats")
        yield SampleInput((t, make((2, 1), "int64", low=0, high=3), 0), {}, f"{lay}2d-repeats")
        yield SampleInput((t, make((2,), "int64", low=0, high=3), 1), {}, f"{lay}badsize")


def _ri_one_arg_samples(dtype):
    for shape in ((4,), (0,), (), (2, 2)):
        for lay, t in hostile(shape, dtype, low=0, high=4):
            yield SampleInput((t,), {}, f"{lay}{list(shape)}")


def _ri_errors():
    x = make((2, 3))
    yield ErrorInput(SampleInput((x, -1, None)), RuntimeError, "Repeats must be non-negative")
    yield ErrorInput(SampleInput((x, ember.tensor([1, -2]), 0)), RuntimeError,
                     "repeats can not be negative")
    yield ErrorInput(SampleInput((x, ember.tensor([1, 2]), 1)), RuntimeError,
                     r"repeats must have the same size as input along dim, but got "
                     r"repeats.size\(0\) = 2 and input.size\(1\) = 3")
    yield ErrorInput(SampleInput((x, ember.tensor([[2]]), 0)), RuntimeError,
                     "repeats must be 0-dim or 1-dim tensor")
    yield ErrorInput(SampleInput((x, 2, 0), {"output_size": 5}), RuntimeError,
                     "Invalid output_size, expected 4 but got 5")
    yield ErrorInput(SampleInput((x, ember.tensor([1, 2]), 0), {"output_size": 4}),
                     RuntimeError, "allocated size does not match required size")


def _ri_meta_needs_size():
    x = ember.empty(2, 3, device="meta")
    yield ErrorInput(SampleInput((x, ember.empty(2, dtype=ember.int64, device="meta"), 0)),
                     RuntimeError, "cannot repeat_interleave a meta tensor without output_size")


_add(
    OpInfo("repeat_interleave", lambda lib, x, r, d, **k: lib.repeat_interleave(x, r, d, **k),
           _with_args([(), (3,), (2, 3), (2, 0, 3)], [(2, None), (0, None), (3, -1), (1, 0)]),
           dtypes=ALL, errors=_ri_errors),
    OpInfo("repeat_interleave_method", lambda lib, x, r, d: x.repeat_interleave(r, dim=d),
           _with_args([(2, 3)], [(2, 0), (2, None)]), dtypes=("float64", "float32")),
    OpInfo("repeat_interleave_output_size",
           lambda lib, x, r, d, n: lib.repeat_interleave(x, r, d, output_size=n),
           lambda dt: [SampleInput((make((2, 3), dt), ember.tensor([1, 3]), 0, 4), {}, "t"),
                       SampleInput((make((2, 3), dt), 2, 1, 6), {}, "int")],
           dtypes=ALL),
    OpInfo("repeat_interleave_tensor", lambda lib, x, r, d: lib.repeat_interleave(x, r, d),
           _ri_tensor_samples, dtypes=ALL, meta=False),
    OpInfo("repeat_interleave_one_arg", lambda lib, r: lib.repeat_interleave(r),
           _ri_one_arg_samples, dtypes=ALL, meta=False),
    OpInfo("repeat_interleave_meta", lambda lib, x, r, d: lib.repeat_interleave(x, r, d),
           lambda dt: [], dtypes=(), errors=_ri_meta_needs_size),
)


# -- triangles, diagonals, trace, cross ----------------------------------------------------------
TRI_SHAPES = [(3, 4), (4, 3), (2, 3, 4), (0, 3), (1, 1), (2, 0, 2)]
TRI_K = [(0,), (1,), (-1,), (5,), (-6,)]


def _tri_errors(name):
    def gen():
        yield ErrorInput(SampleInput((make((3,)), 0)), RuntimeError,
                         f"{name}: input tensor must have at least 2 dimensions")
    return gen


def _inplace(name):
    def fn(lib, x, k):
        out = getattr(x, name)(k)
        assert out is x
        return x
    return fn


def _tri_out(name):
    def fn(lib, x, k, out):
        res = getattr(lib, name)(x, k, out=out)
        assert res is out
        return out
    return fn


for _name in ("tril", "triu"):
    _add(OpInfo(_name, (lambda n: lambda lib, x, k: getattr(lib, n)(x, k))(_name),
                _with_args(TRI_SHAPES, TRI_K), dtypes=ALL, errors=_tri_errors(_name)),
         OpInfo(_name + "_", _inplace(_name + "_"), _with_args(TRI_SHAPES, TRI_K, writable=True),
                dtypes=ALL, meta=False),
         OpInfo(_name + "_out", _tri_out(_name),
                lambda dt: [SampleInput((make((3, 4), dt, layout="permuted"), 1,
                                         _empty(dt)), {}, "resize-out")], dtypes=ALL))


def _diag_errors():
    yield ErrorInput(SampleInput((make((2, 3, 4)), 0)), RuntimeError,
                     r"diag\(\): Supports 1D or 2D tensors. Got 3D")
    yield ErrorInput(SampleInput((make(()), 0)), RuntimeError,
                     r"diag\(\): Supports 1D or 2D tensors. Got 0D")


def _diag_embed_errors():
    yield ErrorInput(SampleInput((make((3,)), 0, 0, 0)), RuntimeError,
                     "diagonal dimensions cannot be identical 0, 0")
    yield ErrorInput(SampleInput((make(()), 0, -2, -1)), IndexError, "Dimension out of range")
    yield ErrorInput(SampleInput((make((2, 3)), 1, 0, 3)), IndexError, "Dimension out of range")


def _cross_samples(dtype):
    for sa, sb, dim in (((4, 3), (4, 3), 1), ((4, 3), (1, 3), -1), ((3, 5), (3, 5), 0),
                        ((2, 3, 4), (2, 3, 1), 1), ((0, 3), (0, 3), 1), ((3,), (3,), 0)):
        for lay in ("contiguous", "permuted", "strided", "expanded"):
            a = make(sa, dtype, layout=lay if len(sa) >= 2 or lay != "permuted" else
                     "contiguous")
            yield SampleInput((a, make(sb, dtype, layout="strided"), dim), {}, f"{lay}{sa}{sb}")


def _cross_errors():
    yield ErrorInput(SampleInput((make((4, 3)), make((4, 3, 1)), 1)), RuntimeError,
                     "linalg.cross: inputs must have the same number of dimensions.")
    yield ErrorInput(SampleInput((make((4, 2)), make((4, 2)), 1)), RuntimeError,
                     "linalg.cross: inputs dimension 1 must have length 3. Got 2 and 2")
    yield ErrorInput(SampleInput((make((4, 2)), make((4, 2)), None)), RuntimeError,
                     "no dimension of size 3 in input")
    yield ErrorInput(SampleInput((make((4, 3), "float16"), make((4, 3)), 1)), RuntimeError,
                     "expected scalar type Half but found Float")


def _cross_default(lib, a, b):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.cross(a, b)
    if lib is ember:  # warned once per process, like torch's TORCH_WARN_ONCE
        assert len(caught) <= 1
    return out


def _number_tensor_samples(dtype):
    """``(op name, args, kwargs)`` with ints given as 0-d tensors, which torch takes as the
    ints (meta=False: a meta tensor holds no int to read)."""
    x = make((3, 4), dtype, layout="permuted")
    yield SampleInput(("roll", x, ember.tensor(-3), ember.tensor(-1)), {}, "roll")
    yield SampleInput(("rot90", x, ember.tensor(3), (0, 1)), {}, "rot90")
    yield SampleInput(("diag", x, ember.tensor(-1)), {}, "diag")
    yield SampleInput(("repeat_interleave", x, ember.tensor(2), ember.tensor(0)), {},
                      "repeat_interleave")


_add(
    OpInfo("shape_number_tensors", lambda lib, name, *a, **k: getattr(lib, name)(*a, **k),
           _number_tensor_samples, dtypes=ALL, meta=False),
    OpInfo("diag", lambda lib, x, k: lib.diag(x, k),
           _with_args([(0,), (1,), (4,), (3, 4), (4, 3), (0, 3), (1, 1)],
                      [(0,), (1,), (-2,), (6,)]), dtypes=ALL, errors=_diag_errors),
    OpInfo("diag_out", lambda lib, x, k, out: lib.diag(x, k, out=out),
           lambda dt: [SampleInput((make((3,), dt), 1, _empty(dt)), {}, "1d"),
                       SampleInput((make((3, 4), dt, layout="permuted"), -1, _empty(dt)),
                                   {}, "2d")], dtypes=ALL),
    OpInfo("diag_embed", lambda lib, x, *a: lib.diag_embed(x, *a),
           _with_args([(3,), (2, 3), (2, 1, 3), (0,), (2, 0)],
                      [(), (1,), (-2,), (0, 0, 2), (1, -1, 0), (-1, 2, 0)]),
           dtypes=ALL, errors=_diag_embed_errors),
    OpInfo("diagflat", lambda lib, x, k: lib.diagflat(x, k),
           _with_args([(), (3,), (2, 3), (0,), (2, 1, 2)], [(0,), (2,), (-1,)]), dtypes=ALL),
    OpInfo("trace", lambda lib, x: lib.trace(x),
           _with_args([(3, 3), (3, 4), (4, 2), (0, 3), (1, 1), (3,), (2, 2, 2)], [()]),
           dtypes=ALL),
    OpInfo("trace_method", lambda lib, x: x.trace(), _with_args([(3, 5)], [()]),
           dtypes=("float64", "int8", "float16")),
    OpInfo("cross", lambda lib, a, b, d: lib.cross(a, b, dim=d), _cross_samples,
           dtypes=ALL + COMPLEX,
           errors=_cross_errors),
    OpInfo("cross_default_dim", _cross_default,
           lambda dt: [SampleInput((make((3, 4, 3), dt), make((3, 4, 3), dt)), {}, "first3"),
                       SampleInput((make((4, 3), dt, layout="permuted"), make((4, 3), dt)),
                                   {}, "dim1")],
           dtypes=("float64", "float32", "int64") + COMPLEX),
    OpInfo("cross_out", lambda lib, a, b, out: lib.cross(a, b, dim=1, out=out),
           lambda dt: [SampleInput((make((2, 3), dt), make((2, 3), dt), _empty(dt)), {},
                                   "resize")], dtypes=("float64",)),
)


# -- sorting and selection -----------------------------------------------------------------------
SORT_SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 1, 6), (2, 3, 0)]


def _sort_samples(kw_sets, nan=True):
    def gen(dtype):
        for shape in SORT_SHAPES:
            for lay in LAYOUTS:
                if lay == "permuted" and len(shape) < 2:
                    continue
                tensors = [(lay, make(shape, dtype, layout=lay)),
                           (lay + "-ties", _small_ints(shape, dtype, lay, nan=nan))]
                for name, t in tensors:
                    for kw in kw_sets:
                        kw = {k: v for k, v in kw.items() if k != "dim" or len(shape) > 0
                              or v in (0, -1)}
                        yield SampleInput((t,), dict(kw), f"{name}{list(shape)}{kw}")
    return gen


SORT_KW = [{}, {"dim": 0}, {"descending": True}, {"dim": 0, "descending": True}]


def _sort_errors():
    yield ErrorInput(SampleInput((make(()),), {"dim": 1}), IndexError,
                     "Dimension out of range")


def _sort_stable(lib, x, **kw):
    return lib.sort(x, stable=True, **kw)


def _sort_out(lib, x, v, i):
    res = lib.sort(x, 0, True, out=(v, i))
    assert res[0] is v and res[1] is i
    return v, i


_add(
    OpInfo("sort_stable", _sort_stable, _sort_samples(SORT_KW), dtypes=ALL + COMPLEX,
           errors=_sort_errors),
    OpInfo("sort_method_stable", lambda lib, x, **kw: x.sort(stable=True, **kw),
           _sort_samples([{"dim": 0, "descending": True}]), dtypes=("float64", "float32", "int16")),
    OpInfo("sort", _sort_selected, _sort_samples(SORT_KW), dtypes=ALL + COMPLEX),
    OpInfo("sort_out", _sort_out,
           lambda dt: [SampleInput((_small_ints((4, 3), dt, "permuted"), _empty(dt),
                                    ember.empty(0, dtype=ember.int64)), {}, "out")],
           dtypes=ALL + COMPLEX),
    OpInfo("argsort_stable", lambda lib, x, **kw: lib.argsort(x, stable=True, **kw),
           _sort_samples(SORT_KW), dtypes=ALL + COMPLEX),
    OpInfo("argsort_positional", lambda lib, x: lib.argsort(x, 0, True),
           _sort_samples([{}], nan=False), dtypes=("float64", "uint8")),
    OpInfo("msort", lambda lib, x: lib.msort(x), _sort_samples([{}]), dtypes=ALL + COMPLEX),
    OpInfo("msort_out", lambda lib, x, out: lib.msort(x, out=out),
           lambda dt: [SampleInput((make((3, 2), dt), _empty(dt)), {}, "out")],
           dtypes=ALL + COMPLEX),
)


def _topk_samples(dtype):
    for shape in [(), (5,), (3, 5), (2, 1, 6), (0,), (3, 0)]:
        for lay in LAYOUTS:
            if lay == "permuted" and len(shape) < 2:
                continue
            for name, t in ((lay, make(shape, dtype, layout=lay)),
                            (lay + "-ties", _small_ints(shape, dtype, lay, nan=True))):
                last = shape[-1] if shape else 1
                for k in {0, min(1, last), min(2, last), last}:
                    for largest in (True, False):
                        yield SampleInput((t, k), {"largest": largest},
                                          f"{name}{list(shape)}k{k}{largest}")
                if len(shape) >= 2:
                    yield SampleInput((t, min(2, shape[0])), {"dim": 0}, f"{name}dim0")


def _topk_errors():
    yield ErrorInput(SampleInput((make((3,)), 4)), RuntimeError, "selected index k out of range")
    yield ErrorInput(SampleInput((make((3,)), -1)), RuntimeError, "selected index k out of range")
    yield ErrorInput(SampleInput((make((3,), "bool"), 1)), RuntimeError,
                     "topk does not support bool dtypes on CPU")


def _topk_unsorted(lib, x, k):
    values, indices = lib.topk(x, k, sorted=False)
    values = lib.sort(values, descending=True, stable=True)[0]
    return values, lib.sort(_gathered(lib, x, -1 % max(x.dim(), 1), indices),
                            descending=True, stable=True)[0]


def _kth_samples(dtype):
    for shape in [(), (5,), (3, 5), (2, 1, 6), (3, 0), (0, 3)]:
        for lay in LAYOUTS:
            if lay == "permuted" and len(shape) < 2:
                continue
            for name, t in ((lay, make(shape, dtype, layout=lay)),
                            (lay + "-ties", _small_ints(shape, dtype, lay, nan=True))):
                last = shape[-1] if shape else 1
                for k in {1, max(1, last // 2), max(1, last)}:
                    for keepdim in (False, True):
                        yield SampleInput((t, k, -1, keepdim), {}, f"{name}{list(shape)}k{k}")
                if len(shape) >= 2 and shape[0]:
                    yield SampleInput((t, shape[0], 0, False), {}, f"{name}dim0")


def _kth_errors():
    yield ErrorInput(SampleInput((make((3,)), 4)), RuntimeError,
                     r"kthvalue\(\): selected number k out of range for dimension 0")
    yield ErrorInput(SampleInput((make((3,)), 0)), RuntimeError,
                     r"kthvalue\(\): selected number k out of range for dimension 0")
    yield ErrorInput(SampleInput((make((3, 0)), 1)), IndexError,
                     r"kthvalue\(\): Expected reduction dim 1 to have non-zero size")
    yield ErrorInput(SampleInput((make((3,), "bool"), 1)), NotImplementedError,
                     "kthvalue_cpu")


def _names_check(lib, x):
    s, t, k = lib.sort(x), lib.topk(x, 2), lib.kthvalue(x, 2)
    assert type(s).__name__ == "sort" and type(t).__name__ == "topk"
    assert type(k).__name__ == "kthvalue"
    return s.values, s.indices, t.values, k.indices


_add(
    OpInfo("topk", _topk_selected, _topk_samples, dtypes=ALL + COMPLEX, errors=_topk_errors),
    OpInfo("topk_unsorted", _topk_unsorted,
           _with_args([(6,), (2, 5)], [(3,)]), dtypes=NUMERIC),
    OpInfo("kthvalue", _kth_selected, _kth_samples, dtypes=ALL + COMPLEX,
           errors=_kth_errors),
    OpInfo("sort_result_names", _names_check, lambda dt: [SampleInput((make((3, 4), dt),))],
           dtypes=("float64", "float32")),
)


# -- unique and friends (data-dependent output shapes: meta=False) -------------------------------
UNIQUE_SHAPES = [(), (0,), (7,), (3, 4), (2, 1, 3), (2, 3, 0), (0, 2)]


def _unique_samples(kw_sets, with_dim=False):
    def gen(dtype):
        for shape in UNIQUE_SHAPES:
            for lay in LAYOUTS:
                if lay == "permuted" and len(shape) < 2:
                    continue
                t = _small_ints(shape, dtype, lay, nan=False)
                for kw in kw_sets:
                    yield SampleInput((t,), dict(kw), f"{lay}{list(shape)}{kw}")
                    if with_dim:
                        for d in range(-len(shape), len(shape)):
                            yield SampleInput((t,), dict(kw, dim=d), f"{lay}{list(shape)}@{d}")
                if with_dim and not shape:
                    yield SampleInput((t,), {"dim": 0}, "0d-dim")
    return gen


UNIQUE_KW = [{}, {"return_inverse": True}, {"return_counts": True},
             {"return_inverse": True, "return_counts": True}]


def _unique_nan_samples(dtype):
    for lay in ("contiguous", "strided"):
        yield SampleInput((_small_ints((9,), dtype, lay, nan=True),),
                          {"return_inverse": True, "return_counts": True}, f"{lay}nan")


def _unique_meta_errors():
    m = ember.empty(3, 4, device="meta")
    yield ErrorInput(SampleInput((m,)), NotImplementedError, "Meta")


def _bincount_meta_errors():
    yield ErrorInput(SampleInput((ember.empty(3, dtype=ember.int64, device="meta"),)),
                     NotImplementedError, "Meta")


def _unique_dim_errors():
    yield ErrorInput(SampleInput((make(()),), {"dim": 0}), IndexError,
                     "Dimension specified as 0 but tensor has no dimensions")
    yield ErrorInput(SampleInput((make((2, 0)),), {"dim": 0}), RuntimeError,
                     "There are 0 sized dimensions, and they aren't selected")


_add(
    OpInfo("unique", lambda lib, x, **kw: lib.unique(x, **kw),
           _unique_samples(UNIQUE_KW, with_dim=True), dtypes=ALL + COMPLEX, meta=False,
           errors=_unique_dim_errors),
    OpInfo("unique_method", lambda lib, x, **kw: x.unique(**kw),
           _unique_samples([{"sorted": False, "return_inverse": True}]), dtypes=ALL + COMPLEX,
           meta=False),
    OpInfo("unique_nan", lambda lib, x, **kw: lib.unique(x, **kw), _unique_nan_samples,
           dtypes=FLOATS, meta=False),
    OpInfo("unique_consecutive", lambda lib, x, **kw: lib.unique_consecutive(x, **kw),
           _unique_samples(UNIQUE_KW, with_dim=True), dtypes=ALL + COMPLEX, meta=False,
           errors=_unique_dim_errors),
    OpInfo("unique_consecutive_nan", lambda lib, x, **kw: lib.unique_consecutive(x, **kw),
           _unique_nan_samples, dtypes=FLOATS, meta=False),
    OpInfo("unique_meta", lambda lib, x: lib.unique(x), lambda dt: [], dtypes=(),
           errors=_unique_meta_errors),
    OpInfo("unique_consecutive_meta", lambda lib, x: lib.unique_consecutive(x),
           lambda dt: [], dtypes=(), errors=_unique_meta_errors),
    OpInfo("bincount_meta", lambda lib, x: lib.bincount(x), lambda dt: [], dtypes=(),
           errors=_bincount_meta_errors),
)


# -- bincount, histc -----------------------------------------------------------------------------
def _bincount_samples(dtype):
    for n in (0, 1, 9):
        for lay in ("contiguous", "strided", "offset", "expanded"):
            x = make((n,), dtype, layout=lay, low=0, high=6)
            yield SampleInput((x,), {}, f"{lay}{n}")
            yield SampleInput((x,), {"minlength": 8}, f"{lay}{n}min8")
            for wd in ("float32", "float64", "float16", "int32", "bool"):
                w = make((n,), wd, layout="strided")
                yield SampleInput((x, w), {}, f"{lay}{n}w{wd}")
    yield SampleInput((make((2, 2), dtype, low=0, high=3),), {}, "2d")


def _bincount_errors():
    yield ErrorInput(SampleInput((ember.tensor([-1, 2]),)), RuntimeError,
                     "bincount only supports 1-d non-negative integral inputs.")
    yield ErrorInput(SampleInput((ember.tensor([1, 2]), ember.ones(3))), RuntimeError,
                     "weights should be 1-d and have the same length as input")
    yield ErrorInput(SampleInput((ember.tensor([1, 2]),), {"minlength": -1}), RuntimeError,
                     "minlength should be >= 0")
    yield ErrorInput(SampleInput((ember.tensor([1.0, 2.0]),)), NotImplementedError,
                     "\"bincount_cpu\" not implemented for 'Float'")


def _histc_samples(dtype):
    for shape in ((), (0,), (7,), (3, 5), (2, 1, 3)):
        for lay, t in hostile(shape, dtype):
            for kw in ({}, {"bins": 4}, {"bins": 3, "min": -1, "max": 1},
                       {"bins": 5, "min": 2, "max": 2}, {"bins": 1, "min": -10, "max": 10}):
                yield SampleInput((t,), kw, f"{lay}{list(shape)}{kw}")
    const = _small_ints((6,), dtype, "contiguous")
    const.fill_(1)
    yield SampleInput((const,), {"bins": 4}, "constant")
    yield SampleInput((_small_ints((9,), dtype, "strided", nan=True),),
                      {"bins": 3, "min": 0, "max": 3}, "nan-ignored")
    yield SampleInput((ember.tensor([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).to(
        getattr(ember, dtype)),), {"bins": 3, "min": 0, "max": 10}, "edges")


def _histc_errors():
    yield ErrorInput(SampleInput((ember.tensor([1.0, float("nan")]),), {"bins": 4}),
                     RuntimeError, "torch.histc: range of .* is not finite")
    yield ErrorInput(SampleInput((ember.tensor([1.0, float("inf")]),), {"bins": 4}),
                     RuntimeError, r"torch.histc: range of \[1, inf\] is not finite")
    yield ErrorInput(SampleInput((ember.tensor([1.0, 2.0]),), {"bins": 0}), RuntimeError,
                     "bins must be > 0, but got 0")
    yield ErrorInput(SampleInput((ember.tensor([1.0, 2.0]),), {"bins": 4, "min": 3, "max": 1}),
                     RuntimeError, "max must be larger than min")
    yield ErrorInput(SampleInput((ember.tensor([1, 2]),), {"bins": 4}), NotImplementedError,
                     "histogram_cpu")


_add(
    OpInfo("bincount", lambda lib, x, *a, **k: lib.bincount(x, *a, **k), _bincount_samples,
           dtypes=ALL, meta=False, errors=_bincount_errors),
    OpInfo("bincount_method", lambda lib, x: x.bincount(minlength=3),
           _with_args([(5,)], [()], low=0, high=4), dtypes=INTS, meta=False),
    OpInfo("histc", lambda lib, x, **k: lib.histc(x, **k), _histc_samples, dtypes=ALL,
           errors=_histc_errors),
    OpInfo("histc_out", lambda lib, x, out: lib.histc(x, 4, out=out),
           lambda dt: [SampleInput((make((5,), dt), _empty(dt)), {}, "out")],
           dtypes=FLOATS),
)


# -- searchsorted, bucketize ---------------------------------------------------------------------
def _search_samples(dtype):
    for bshape, vshape in (((6,), (4,)), ((6,), (2, 3)), ((6,), ()), ((2, 5), (2, 3)),
                           ((3, 2, 4), (3, 2, 1)), ((0,), (3,)), ((3, 0), (3, 2)),
                           ((4,), (0,))):
        for lay in ("contiguous", "strided", "offset", "permuted", "expanded"):
            if lay == "permuted" and len(bshape) < 2:
                continue
            seq = _sorted_tensor(bshape, dtype, lay, low=-4, high=5)
            vals = make(vshape, dtype, layout="strided", low=-5, high=6)
            for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left"},
                       {"out_int32": True}):
                yield SampleInput((seq, vals), kw, f"{lay}{bshape}{vshape}{kw}")
    seq = _sorted_tensor((6,), dtype, "contiguous")
    yield SampleInput((seq, 1), {}, "int-scalar")
    yield SampleInput((seq, make((4,), "float64")), {}, "mixed-float64")
    yield SampleInput((seq, make((4,), "int32")), {"right": True}, "mixed-int32")
    unsorted = make((6,), dtype, layout="strided")
    order = ember.tensor(np.argsort(unsorted.numpy().astype(np.float32), kind="stable"))
    yield SampleInput((unsorted, make((5,), dtype)), {"sorter": order}, "sorter")


def _search_nan_samples(dtype):
    seq = ember.tensor([1.0, 2, 2, 3, float("nan")]).to(getattr(ember, dtype))
    vals = ember.tensor([2.0, float("nan"), -1, 9]).to(getattr(ember, dtype))
    for kw in ({}, {"right": True}):
        yield SampleInput((seq, vals), kw, f"nan{kw}")


def _search_errors():
    s, v = ember.tensor([1.0, 2, 3]), ember.tensor([2.0])
    yield ErrorInput(SampleInput((s, v), {"side": "foo"}), RuntimeError,
                     "side can only be 'left' or 'right' but got foo")
    yield ErrorInput(SampleInput((s, v), {"side": "left", "right": True}), RuntimeError,
                     "side and right can't be set to opposites")
    yield ErrorInput(SampleInput((ember.tensor(1.0), v)), RuntimeError,
                     "boundaries tensor should have positive dimension, but got 0 dimension")
    yield ErrorInput(SampleInput((ember.ones(2, 2), ember.ones(3, 1))), RuntimeError,
                     r"boundaries tensor \[2, 2\] and input value tensor \[3, 1\]")
    yield ErrorInput(SampleInput((s, v), {"sorter": ember.tensor([1, 2])}), RuntimeError,
                     "boundary and sorter must have the same size")
    yield ErrorInput(SampleInput((s, v), {"sorter": ember.tensor([1, 2, 5])}), RuntimeError,
                     "sorter index out of range")
    yield ErrorInput(SampleInput((s, v), {"out": ember.empty(0, dtype=ember.int32)}),
                     RuntimeError, "output tensor's dtype is wrong")
    yield ErrorInput(SampleInput((ember.tensor([True, False]), ember.tensor([True]))),
                     NotImplementedError, "searchsorted_out_cpu")


def _bucketize_samples(dtype):
    for vshape in ((4,), (2, 3), (), (0,)):
        for lay, vals in hostile(vshape, dtype, low=-5, high=6):
            bounds = _sorted_tensor((5,), dtype, "strided", low=-4, high=5)
            for kw in ({}, {"right": True}, {"out_int32": True}):
                yield SampleInput((vals, bounds), kw, f"{lay}{vshape}{kw}")
    yield SampleInput((2, _sorted_tensor((5,), dtype, "contiguous")), {}, "scalar-input")


def _bucketize_errors():
    yield ErrorInput(SampleInput((ember.tensor([1.0]), ember.ones(2, 2))), RuntimeError,
                     r"boundaries tensor must be 1 dimension, but got dim\(2\)")


_add(
    OpInfo("searchsorted", lambda lib, s, v, **k: lib.searchsorted(s, v, **k), _search_samples,
           dtypes=ALL + COMPLEX, errors=_search_errors),
    OpInfo("searchsorted_nan", lambda lib, s, v, **k: lib.searchsorted(s, v, **k),
           _search_nan_samples, dtypes=FLOATS),
    OpInfo("searchsorted_out", lambda lib, s, v, out: lib.searchsorted(s, v, out=out),
           lambda dt: [SampleInput((_sorted_tensor((5,), dt, "contiguous"), make((2, 2), dt),
                                    ember.empty(0, dtype=ember.int64)), {}, "out")],
           dtypes=NUMERIC),
    OpInfo("bucketize", lambda lib, v, b, **k: lib.bucketize(v, b, **k), _bucketize_samples,
           dtypes=ALL + COMPLEX, errors=_bucketize_errors),
)


# -- gradient-only adjustments -------------------------------------------------------------------
def _tie_free(info: OpInfo) -> OpInfo:
    """A float64 copy of ``info`` without tie samples, for the gradient tests; ``info`` itself
    leaves them.

    Which of several equal elements unstable ``sort``, ``topk`` and ``kthvalue`` pick is
    implementation defined, and the gradient goes to the picked one, so gradients are compared
    with torch's on distinct values here; tests/ops/test_shape_extra.py compares tie gradients
    where ember and torch picked the same index. (``-ties`` samples hold ties and NaN, and
    ``expanded`` inputs repeat their values.)
    """
    def gen(dtype):
        return (s for s in info.samples(dtype)
                if "-ties" not in s.name and not s.name.startswith("expanded"))

    info.grad = False
    return OpInfo(info.name + "_grad", info.fn, gen, dtypes=("float64",))


_BY_NAME = {info.name: info for info in OPS}
_add(*(_tie_free(_BY_NAME[n]) for n in ("sort", "topk", "topk_unsorted", "kthvalue")))

# torch's unique family records a node whose backward raises ("the derivative for '_unique2'
# is not implemented"), so there is no gradient to compare; test_shape_extra.py checks that
# the outputs' requires_grad and the backward error match torch.
for _name in ("unique", "unique_method", "unique_nan", "unique_consecutive",
              "unique_consecutive_nan"):
    _BY_NAME[_name].grad = False

# histc is not differentiable; with out= the result *is* the out= tensor, which the test makes
# a leaf requiring grad: histc overwrites it without recording anything (in torch too), so
# finite differences with respect to it are 0 while autograd sees the identity.
_BY_NAME["histc_out"].gradcheck = False
