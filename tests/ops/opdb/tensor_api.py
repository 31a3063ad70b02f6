"""Op-table entries: Tensor.type, storage(), in-place views, resize_, set_, ravel and the
``numel``/``is_*`` predicates (ember.ops.tensor_api)."""

from __future__ import annotations

import ember
from tests.opinfo import ALL, FLOATS, SHAPES, ErrorInput, OpInfo, SampleInput, hostile, make


def _layouts(shape, *arg_sets, writable=False, layouts=None):
    def gen(d):
        for lay, t in hostile(shape, d, writable=writable,
                              **({"layouts": layouts} if layouts else {})):
            for args in arg_sets:
                yield SampleInput((t, *args), {}, f"{lay}{args}")
    return gen


def _all_shapes(d):
    for shape in SHAPES:
        for lay, t in hostile(shape, d):
            yield SampleInput((t,), {}, f"{lay}{list(shape)}")


def _type_samples(d):
    for target in (ember.int64, ember.float32, ember.float64, ember.bool, ember.float16,
                   "torch.LongTensor", "torch.DoubleTensor", "torch.BFloat16Tensor",
                   "torch.ByteTensor", "torch.FloatTensor"):
        yield SampleInput((make((3, 4), d, layout="strided"), target), {}, str(target))


def _type_errors():
    x = make((2,), "float32")
    yield ErrorInput(SampleInput((x, "torch.NoSuchTensor")), ValueError, "invalid type")
    yield ErrorInput(SampleInput((x, "FloatTensor")), ValueError, "invalid type")


def _storage_fn(lib, x):
    s = x.storage()
    return s.size(), len(s), s.element_size(), s.nbytes(), s.type(), s.tolist(), \
        s[0] if len(s) else None


def _resize_samples(d):
    for lay, t in hostile((3, 4), d):
        for shape in ((12,), (2, 3), (3, 4), (0,), (1, 1, 2)):
            yield SampleInput((t, shape), {}, f"{lay}->{shape}")


def _resize_fn(lib, x, shape):
    y = x.clone()  # resize_ never shrinks the storage: the kept elements are the first ones
    out = y.resize_(*shape)
    return out, out.stride(), out is y


def _set_samples(d):
    for lay, src in hostile((3, 4), d):
        yield SampleInput((make((2,), d), src), {}, lay)


def _set_fn(lib, x, src):
    out = x.set_(src)
    return out, out.stride(), out.storage_offset(), out.data_ptr() == src.data_ptr()


def _set_storage_fn(lib, x, src):
    out = x.set_(src.untyped_storage(), 1, (2, 2), (1, 2))
    return out, out.stride(), out.storage_offset()


def _set_errors():
    yield ErrorInput(SampleInput((make((2,), "float32"), make((3,), "int64"))), RuntimeError,
                     "Could not set tensor of type Long")


def _predicates(lib, x):
    return (lib.numel(x), lib.is_tensor(x), lib.is_tensor(x.tolist()), lib.is_floating_point(x),
            lib.is_same_size(x, x), x.is_same_size(x.unsqueeze(0)))


def _nonzero_samples(d):
    for shape in ((), (1,), (1, 1), (0,), (2,)):
        yield SampleInput((make(shape, d),), {}, str(shape))
    yield SampleInput((ember.zeros((), dtype=getattr(ember, d)),), {}, "zero")


def _inplace_view(name):
    return lambda lib, x, *a: getattr(x, name)(*a)


def _inplace_view_of_result(name):
    """The in-place view applied to a non-leaf (``x * 1``): gradients flow through it."""
    return lambda lib, x, *a: getattr(x * 1, name)(*a)


_VIEW_CASES = {
    "squeeze_": ((2, 1, 3, 1), ((), (1,), (0,), ((1, 3),))),
    "unsqueeze_": ((2, 3), ((0,), (2,), (-1,))),
    "t_": ((3, 4), ((),)),
    "transpose_": ((2, 3, 4), ((0, 2), (1, -1))),
    "swapdims_": ((2, 3, 4), ((0, 2), (1, 1))),
    "swapaxes_": ((2, 3, 4), ((2, 0),)),
}

OPS = [
    OpInfo("Tensor.type", lambda lib, x, target: x.type(target), _type_samples, dtypes=ALL,
           errors=_type_errors),
    OpInfo("Tensor.type_float", lambda lib, x, target: x.type(target),
           lambda d: [SampleInput((make((3, 4), d, layout="strided"), t), {}, str(t))
                      for t in (ember.float64, "torch.FloatTensor", "torch.DoubleTensor")],
           dtypes=FLOATS),
    OpInfo("Tensor.type_name", lambda lib, x: x.type(), _all_shapes, dtypes=ALL, meta=False),
    # the op table builds torch's empty tensors without their storage: non-empty shapes only
    OpInfo("Tensor.storage", _storage_fn,
           lambda d: [s for s in _all_shapes(d) if s.args[0].numel()], dtypes=ALL, meta=False),
    OpInfo("ravel", lambda lib, x: lib.ravel(x), _all_shapes, dtypes=ALL, check_stride=True),
    OpInfo("ravel_method", lambda lib, x: x.ravel(), _all_shapes, dtypes=("float32",)),
    OpInfo("resize_", _resize_fn, _resize_samples, dtypes=ALL),
    OpInfo("resize_as_", lambda lib, x, y: x.clone().resize_as_(y),
           lambda d: [SampleInput((make((4, 3), d), make(s, d)), {}, str(s))
                      for s in ((12,), (2, 2), (0, 3))], dtypes=ALL, meta=False),
    OpInfo("set_", _set_fn, _set_samples, dtypes=ALL, errors=_set_errors, meta=False),
    OpInfo("set_storage", _set_storage_fn, _set_samples, dtypes=ALL, meta=False),
    OpInfo("set_empty", lambda lib, x: x.set_(), _all_shapes, dtypes=("float32",), meta=False),
    OpInfo("predicates", _predicates, _all_shapes, dtypes=ALL, meta=False),
    OpInfo("is_nonzero", lambda lib, x: lib.is_nonzero(x), _nonzero_samples, dtypes=ALL,
           meta=False),
]
for _name, (_shape, _args) in _VIEW_CASES.items():
    # meta=False: the CPU run changes the sample's geometry (the _grad twin checks Meta)
    OPS.append(OpInfo(_name, _inplace_view(_name), _layouts(_shape, *_args), dtypes=ALL,
                      is_view=True, meta=False))
    OPS.append(OpInfo(_name + "_grad", _inplace_view_of_result(_name),
                      _layouts(_shape, *_args), dtypes=FLOATS))
OPS.append(OpInfo("t__errors", _inplace_view("t_"), _layouts((2, 3, 4), ()), dtypes=("float32",),
                  errors=lambda: [ErrorInput(SampleInput((make((2, 3, 4), "float32"),)),
                                             RuntimeError, "expects a tensor with <= 2")]))


# -- real forms of the complex API, small methods ----------------------------------------------
def _identity_fn(name):
    def fn(lib, x):
        out = getattr(lib, name)(x)
        return out is x, out
    return fn


def _flags(lib, x):
    return (x.is_conj(), x.is_neg(), lib.is_complex(x), lib.is_signed(x), x.is_sparse,
            x.is_quantized, x.is_nested, x.is_mkldnn, lib.typename(x), lib.get_device(x))


def _fill_diagonal_samples(d):
    for shape, wrap in (((3, 3), False), ((4, 2), False), ((2, 5), False), ((7, 3), True),
                        ((7, 3), False), ((3, 3, 3), False), ((8, 2), True)):
        # torch's wrap assumes contiguous memory (it refuses strided inputs): contiguous only
        lays = ("contiguous",) if wrap else ("contiguous", "permuted", "strided")
        for lay, t in hostile(shape, d, layouts=lays):
            yield SampleInput((t, 2, wrap), {}, f"{lay}{shape}-wrap={wrap}")


def _fill_diagonal_fn(lib, x, value, wrap):
    return (x * 1).fill_diagonal_(value, wrap=wrap) if x.dtype.is_floating_point else \
        x.clone().fill_diagonal_(value, wrap=wrap)


def _sum_to_size_samples(d):
    for lay, t in hostile((2, 3, 4), d):
        for size in ((3, 4), (1, 4), (2, 1, 1), (1,), (2, 3, 4)):
            yield SampleInput((t, size), {}, f"{lay}{size}")


def _new_fn(lib, x):
    a, b, c = x.new([[1, 2], [3, 4]]), x.new(2, 3), x.new()
    return a, (tuple(b.shape), str(b.dtype).split(".")[-1]), \
        (tuple(c.shape), str(c.dtype).split(".")[-1])


def _new_empty_strided_fn(lib, x):
    out = x.new_empty_strided((2, 3), (1, 2))
    return tuple(out.shape), out.stride(), str(out.dtype).split(".")[-1]


def _as_strided__fn(lib, x, size, stride, *offset):
    y = x * 1 if x.dtype.is_floating_point else x.clone()
    return y.as_strided_(size, stride, *offset)


def _addr__samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        yield SampleInput((make((3, 4), d, layout=lay), make((3,), d), make((4,), d)),
                          {"beta": 2, "alpha": 3} if d != "bool" else {}, lay)


def _unravel_samples(d):
    yield SampleInput((make((5,), d, low=0, high=24), (2, 3, 4)), {}, "3d")
    yield SampleInput((make((), d, low=0, high=6), (6,)), {}, "0-d")
    yield SampleInput((make((2, 3), d, low=0, high=12), (3, 4)), {}, "2d")


OPS += [
    OpInfo("angle", lambda lib, x: lib.angle(x), _all_shapes, dtypes=ALL),
    OpInfo("angle_special", lambda lib, x: lib.angle(x),
           lambda d: [SampleInput((ember.tensor([-2.0, -0.0, 0.0, 3.0, float("nan"),
                                                 float("-inf")], dtype=getattr(ember, d)),))],
           dtypes=FLOATS),
    OpInfo("isreal", lambda lib, x: lib.isreal(x), _all_shapes, dtypes=ALL),
    OpInfo("conj", _identity_fn("conj"), _all_shapes, dtypes=("float32", "int64")),
    OpInfo("conj_physical", _identity_fn("conj_physical"), _all_shapes,
           dtypes=("float32", "int64")),
    OpInfo("resolve_conj", _identity_fn("resolve_conj"), _all_shapes, dtypes=("float32",)),
    OpInfo("resolve_neg", _identity_fn("resolve_neg"), _all_shapes, dtypes=("float32",)),
    OpInfo("real", _identity_fn("real"), _all_shapes, dtypes=("float32",)),
    OpInfo("tensor_flags", _flags, _all_shapes, dtypes=ALL, meta=False),
    OpInfo("dim_order", lambda lib, x: x.dim_order(),
           _layouts((2, 3, 4), (), layouts=("contiguous", "permuted", "strided")),
           dtypes=("float32",), meta=False),
    OpInfo("fill_diagonal_", _fill_diagonal_fn, _fill_diagonal_samples, dtypes=ALL),
    OpInfo("sum_to_size", lambda lib, x, s: x.sum_to_size(*s), _sum_to_size_samples,
           dtypes=FLOATS + ("int64",), tol={"float16": (2e-3, 2e-3),
                                           "bfloat16": (2e-2, 2e-2)}),
    OpInfo("Tensor.new", _new_fn, lambda d: [SampleInput((make((2,), d),))], dtypes=ALL,
           meta=False),
    OpInfo("new_empty_strided", _new_empty_strided_fn, lambda d: [SampleInput((make((2,), d),))],
           dtypes=ALL, meta=False),
    OpInfo("as_strided_", _as_strided__fn,
           lambda d: [SampleInput((make((4, 5), d), (2, 2), (1, 2)), {}, "2x2"),
                      SampleInput((make((4, 5), d), (3,), (3,), 1), {}, "offset")], dtypes=ALL),
    OpInfo("addr_", lambda lib, x, a, b, **k: x.clone().addr_(a, b, **k), _addr__samples,
           dtypes=ALL, tol={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    OpInfo("apply_", lambda lib, x: x.clone().apply_(lambda v: v * 2 + 1), _all_shapes,
           dtypes=("float64", "int64"), meta=False),
    OpInfo("map_", lambda lib, x, y: x.clone().map_(y, lambda a, b: a - 2 * b),
           lambda d: [SampleInput((make((3, 4), d), make((4,), d, layout="strided")))],
           dtypes=("float64", "int64"), meta=False),
    OpInfo("unravel_index", lambda lib, i, s: lib.unravel_index(i, s), _unravel_samples,
           dtypes=("int64", "int32", "int16", "uint8")),
    OpInfo("unsafe_chunk", lambda lib, x, c: lib.unsafe_chunk(x, c), _layouts((7, 3), (3,)),
           dtypes=ALL, is_view=True),
    OpInfo("unsafe_split", lambda lib, x, s, d: x.unsafe_split(s, d),
           _layouts((5, 6), (2, 0), (4, 1)), dtypes=ALL, is_view=True),
    OpInfo("unsafe_split_with_sizes", lambda lib, x, s: lib.unsafe_split_with_sizes(x, s, 1),
           _layouts((5, 6), ([2, 4],)), dtypes=ALL, is_view=True),
    OpInfo("narrow_copy_method", lambda lib, x: x.narrow_copy(1, 1, 2), _layouts((3, 4), ()),
           dtypes=ALL, check_stride=True),
]
_BY_NAME = {info.name: info for info in OPS}
# Gradients of conversions to integer types are checked by the conversion op itself; the
# float targets' gradients are compared in Tensor.type_float (no gradcheck: finite differences
# through a rounding to float32 or float16 are not the derivative).
_BY_NAME["Tensor.type"].grad = False
_BY_NAME["Tensor.type_float"].gradcheck = False
